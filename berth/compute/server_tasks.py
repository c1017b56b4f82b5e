"""Starting a task on a server that lives in a cell (a move, a shelve, an interface change).

Every server action that hands work to a conductor or a host starts the same way: find the
server's Instance in its cell, check that its state allows the action, set its task state in
one conditional update (so of two concurrent actions only one starts; the other gets 409) and
record the instance action that the services' events will go under. A locked server refuses
them all to a non-admin. When the hand-over (a cast) fails, :func:`undo` puts the task state
back.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.common.context import RequestContext
from berth.compute import actions, exceptions
from berth.compute.cells import Cell
from berth.compute.db import build_requests, instances
from berth.compute.db import cells as mappings
from berth.compute.service import ComputeService


@dataclass(frozen=True)
class Started:
    """A task begun: the server's cell and its Instance as it was just before."""

    cell: Cell
    instance: RowMapping

    @property
    def uuid(self) -> str:
        return str(self.instance["uuid"])


def find(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    action: str,
) -> tuple[Cell, RowMapping]:
    """The server's cell and live Instance. NotFound when the caller may not see it; Conflict
    while it has no cell yet (it is being scheduled), as Nova answers for a building server."""
    with service.api_db.read() as conn:
        mapping = mappings.get_instance_mapping(conn, server_uuid)
        building = build_requests.get(conn, server_uuid) if mapping is not None else None
    if mapping is None or not may_see(mapping["project_id"]) or mapping["queued_for_delete"]:
        raise _not_found(server_uuid)
    if mapping["cell_uuid"] is None:
        if building is None:
            raise _not_found(server_uuid)
        raise exceptions.Conflict(
            f"Cannot '{action}' instance {server_uuid} while it is in vm_state building"
        )
    cell = service.cells.cell(mapping["cell_uuid"])
    if cell is None:
        raise exceptions.ComputeError(f"Cell {mapping['cell_uuid']} is not mapped.")
    with service.cells.database(cell).read() as conn:
        row = instances.get(conn, server_uuid, include_deleted=False)
    if row is None:
        raise _not_found(server_uuid)
    return cell, row


def start(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    *,
    action: str,
    task_state: str,
    vm_states: Collection[str],
    task_states: Collection[str | None] = (None,),
    check: Callable[[Cell, RowMapping], None] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Started:
    """Set the server's ``task_state`` if its vm_state is one of ``vm_states`` and its task
    state one of ``task_states``, and record the instance action ``action``. ``check`` may
    refuse the action on what the cell and row say (it raises a ComputeError); ``values`` are
    other columns written with the task state (a rebuild's new image). Conflict when the state
    does not allow it or another request changed it first."""
    cell, row = find(service, context, server_uuid, may_see, action)
    refuse_if_locked(context, row)
    if row["vm_state"] not in vm_states:
        raise exceptions.Conflict(
            f"Cannot '{action}' instance {server_uuid} while it is in vm_state {row['vm_state']}"
        )
    if row["task_state"] not in task_states:
        raise exceptions.Conflict(
            f"Cannot '{action}' instance {server_uuid} while it is in task_state "
            f"{row['task_state']}"
        )
    if check is not None:
        check(cell, row)
    with service.cells.database(cell).write() as conn:
        if not instances.update(
            conn, server_uuid, {**(values or {}), "task_state": task_state}, task_states, vm_states
        ):
            raise exceptions.Conflict(
                f"Instance {server_uuid} changed while '{action}' was asked; try again."
            )
        actions.begin(
            conn, server_uuid, action, context.request_id,
            context.user_id or "", context.project_id or "",
        )  # fmt: skip
    return Started(cell, row)


def refuse_if_locked(context: RequestContext, row: RowMapping) -> None:
    """A locked server refuses every action but unlock to all but admins (Nova's 409)."""
    if row["locked"] and not (context.is_admin or context.has_role("service")):
        raise exceptions.Conflict(f"Instance {row['uuid']} is locked")


def undo(service: ComputeService, started: Started, task_state: str) -> None:
    """Put the task state back as it was (the hand-over to a conductor or host failed)."""
    with service.cells.database(started.cell).write() as conn:
        instances.update(
            conn, started.uuid, {"task_state": started.instance["task_state"]}, [task_state]
        )


def _not_found(server_uuid: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Instance {server_uuid} could not be found.")

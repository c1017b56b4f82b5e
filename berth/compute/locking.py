"""Locking a server, and forcing its state (``lock``, ``unlock``, ``os-resetState``).

These change only the server's Instance, in the API's own request, as Nova's do: no host is
involved. A locked server refuses every other action and its delete to all but admins
(:func:`server_tasks.refuse_if_locked`). The lock remembers who took it: ``owner`` (a caller of
the server's project) or ``admin`` (another, an admin); an owner lifting an admin's lock needs
the ``unlock_override`` rule, which the API checks with :func:`locked_by_other`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlalchemy.engine import Connection

from berth.common.context import RequestContext
from berth.common.timeutils import utcnow
from berth.compute import actions, exceptions, server_tasks
from berth.compute.db import instance_actions, instances
from berth.compute.service import ComputeService

LOCK = "lock"
UNLOCK = "unlock"
RESET_STATE = "resetState"
# Events the API itself records under its actions, named as Nova's.
_LOCK_STEP = "api_lock"
_UNLOCK_STEP = "api_unlock"


def lock(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    """Lock the server; locking it again as its owner changes nothing."""
    cell, row = server_tasks.find(service, context, server_uuid, may_see, LOCK)
    by = _who(context, row["project_id"])
    if row["locked"] and by == "owner":
        return
    started = utcnow()
    with service.cells.database(cell).write() as conn:
        if not instances.update(conn, server_uuid, {"locked": True, "locked_by": by}):
            raise _not_found(server_uuid)
        _record(conn, context, server_uuid, LOCK, _LOCK_STEP, started)


def locked_by_other(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> bool:
    """Whether the lock was taken by the other kind of caller (an admin, for the owner)."""
    _, row = server_tasks.find(service, context, server_uuid, may_see, UNLOCK)
    return bool(row["locked_by"]) and row["locked_by"] != _who(context, row["project_id"])


def unlock(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    cell, _ = server_tasks.find(service, context, server_uuid, may_see, UNLOCK)
    started = utcnow()
    with service.cells.database(cell).write() as conn:
        if not instances.update(conn, server_uuid, {"locked": False, "locked_by": None}):
            raise _not_found(server_uuid)
        _record(conn, context, server_uuid, UNLOCK, _UNLOCK_STEP, started)


def reset_state(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    vm_state: str,
) -> None:
    """Force the server's vm_state (``active`` or ``error``) and end any task it had, whatever
    it was: an admin's repair of a server stuck in a state, as Nova's."""
    cell, _ = server_tasks.find(service, context, server_uuid, may_see, RESET_STATE)
    with service.cells.database(cell).write() as conn:
        if not instances.update(conn, server_uuid, {"vm_state": vm_state, "task_state": None}):
            raise _not_found(server_uuid)
        action_id = actions.begin(
            conn, server_uuid, RESET_STATE, context.request_id,
            context.user_id or "", context.project_id or "",
        )  # fmt: skip
        # Done as it is recorded: the action ends at once, as Nova's.
        instance_actions.finish_action(conn, action_id)


def _who(context: RequestContext, project_id: str) -> str:
    return "owner" if context.project_id == project_id else "admin"


def _record(
    conn: Connection,
    context: RequestContext,
    server_uuid: str,
    action: str,
    step: str,
    started: datetime,
) -> None:
    actions.begin(
        conn, server_uuid, action, context.request_id,
        context.user_id or "", context.project_id or "",
    )  # fmt: skip
    actions.step_done(conn, server_uuid, action, step, actions.SUCCESS, start_time=started)


def _not_found(server_uuid: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Instance {server_uuid} could not be found.")

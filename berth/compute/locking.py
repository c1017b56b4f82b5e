"""Locking a server, forcing its state, injecting its network information (``lock``,
``unlock``, ``os-resetState``, ``injectNetworkInfo``).

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
INJECT_NETWORK_INFO = "injectNetworkInfo"
# Events the API itself records under its actions, named as Nova's.
_LOCK_STEP = "api_lock"
_UNLOCK_STEP = "api_unlock"
_INJECT_STEP = "compute_inject_network_info"


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


def inject_network_info(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    """Write the server's network information into its guest again. A simulated guest reads
    its ports from the host, which has them already (``network_info``), so nothing is sent; the
    request is recorded as any other. A server without a host has no guest: Conflict."""
    cell, row = server_tasks.find(service, context, server_uuid, may_see, INJECT_NETWORK_INFO)
    if not row["host"]:
        raise exceptions.Conflict(f"Instance {server_uuid} is not ready: it has no host.")
    started = utcnow()
    with service.cells.database(cell).write() as conn:
        _record(conn, context, server_uuid, INJECT_NETWORK_INFO, _INJECT_STEP, started)


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

"""Deferred delete (upstream's soft delete), on when ``[compute] reclaim_instance_interval`` is
above 0.

A delete then only powers the server off and keeps it, SOFT_DELETED, with everything it holds
(its allocation, ports, bindings, group membership); ``restore`` brings it back ACTIVE and
``forceDelete`` (or another delete) deletes it for good at once. Once the interval has passed
since its soft delete, :func:`reclaim` deletes it as a delete does. A soft-deleted server does
not count against quotas, as upstream's counting leaves it out, so ``restore`` is admitted
against them again. Servers that never ran (no host, or never launched) are deleted at once.

::

    DELETE /servers/{id}  task soft-deleting, action delete ─cast soft_delete_instance─▶ host:
                            power off; vm_state soft-delete, soft_deleted_at; event
                            compute_soft_delete_instance
    restore               quotas admitted; task restoring, action restore ─cast restore_instance─▶
                            host: power on; ACTIVE; event compute_restore_instance
    reclaim (periodic)    task deleting ─cast terminate_instance─▶ host (as a delete); the
                            mapping queued for delete, the group left
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.common.db import Database
from berth.compute import actions, exceptions, quotas, server_tasks
from berth.compute.cells import Cell, CellRegistry
from berth.compute.db import cells as mappings
from berth.compute.db import instances, server_groups
from berth.compute.db.instances import SOFT_DELETED
from berth.compute.db.quotas import RESTORING
from berth.compute.rpc import CellRPC
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

SOFT_DELETING = "soft-deleting"
RESTORE = "restore"
SOFT_DELETE_STEP = "compute_soft_delete_instance"
RESTORE_STEP = "compute_restore_instance"


def start(service: ComputeService, context: RequestContext, cell: Cell, server_uuid: str) -> bool:
    """Soft-delete the server if it may be (it ran on a host and is not soft-deleted already);
    False when it must be deleted at once instead. Conflict when a task is under way."""
    with service.cells.database(cell).write() as conn:
        row = instances.get(conn, server_uuid, include_deleted=False)
        if row is None:
            raise exceptions.NotFound(f"Instance {server_uuid} could not be found.")
        if not row["host"] or row["launched_at"] is None or row["vm_state"] == SOFT_DELETED:
            return False
        server_tasks.refuse_if_locked(context, row)
        if not instances.update(conn, server_uuid, {"task_state": SOFT_DELETING}, [None]):
            raise exceptions.Conflict(
                f"Cannot 'delete' instance {server_uuid} while it is in task_state "
                f"{row['task_state']}"
            )
        actions.begin(
            conn, server_uuid, actions.DELETE, context.request_id,
            context.user_id or "", context.project_id or "",
        )  # fmt: skip
    try:
        service.cell_rpc.host(cell, row["host"]).soft_delete_instance(server_uuid)
    except BusError:
        LOG.exception("could not cast soft_delete_instance for %s", server_uuid)
        with service.cells.database(cell).write() as conn:
            instances.update(conn, server_uuid, {"task_state": None}, [SOFT_DELETING])
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached; it was not deleted."
        ) from None
    return True


def restore(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    """Bring a soft-deleted server back, if the quotas of its project and user have room for
    it again; Conflict in any other state."""
    _, row = server_tasks.find(service, context, server_uuid, may_see, RESTORE)
    if row["vm_state"] != SOFT_DELETED:
        raise exceptions.Conflict(
            f"Cannot 'restore' instance {server_uuid} while it is in vm_state {row['vm_state']}"
        )
    flavor = row["flavor"]
    size = quotas.ServerSize(vcpus=int(flavor["vcpus"]), memory_mb=int(flavor["memory_mb"]))
    owner = (row["project_id"], row["user_id"])
    quotas.prepare_project(service.api_db, owner[0])
    # Under the project's quota lock until the task is set: from then the server counts.
    with service.api_db.write() as conn:
        held = quotas.hold_limits(conn, owner)
        quotas.admit_servers(conn, service.cells, owner, held, size, (1, 1), 0, None)
        started = server_tasks.start(
            service, context, server_uuid, may_see,
            action=RESTORE, task_state=RESTORING, vm_states=[SOFT_DELETED],
        )  # fmt: skip
    try:
        service.cell_rpc.host(started.cell, row["host"]).restore_instance(server_uuid)
    except BusError:
        LOG.exception("could not cast restore_instance for %s", server_uuid)
        server_tasks.undo(service, started, RESTORING)
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached; it was not restored."
        ) from None


def reclaim(
    api_db: Database, cells: CellRegistry, cell_rpc: CellRPC, interval: int, now: dt.datetime
) -> list[str]:
    """Delete, as a delete does, every soft-deleted server whose interval has passed; their
    uuids. A server restored or deleted meanwhile is left to that."""
    due = now - dt.timedelta(seconds=interval)
    reclaimed = []
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            found = instances.list_instances(conn, vm_state=SOFT_DELETED)
        for row in found:
            if row["task_state"] is not None or (row["soft_deleted_at"] or now) > due:
                continue
            if _reclaim_one(api_db, cells, cell_rpc, cell, row["uuid"], row["host"]):
                reclaimed.append(row["uuid"])
    return reclaimed


def _reclaim_one(
    api_db: Database,
    cells: CellRegistry,
    cell_rpc: CellRPC,
    cell: Cell,
    server_uuid: str,
    host: str,
) -> bool:
    with cells.database(cell).write() as conn:
        if not instances.update(
            conn, server_uuid, {"task_state": "deleting"}, [None], [SOFT_DELETED]
        ):
            return False
    try:
        cell_rpc.host(cell, host).terminate_instance(server_uuid)
    except BusError:
        LOG.exception("could not cast terminate_instance to reclaim %s", server_uuid)
        with cells.database(cell).write() as conn:
            instances.update(conn, server_uuid, {"task_state": None}, ["deleting"])
        return False
    with api_db.write() as conn:
        mappings.queue_instance_for_delete(conn, server_uuid)
        server_groups.remove_instance(conn, server_uuid)
    return True

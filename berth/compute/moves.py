"""Cold migrate and resize, with confirm and revert: the compute API's side.

The API checks the request and the server's state, marks the task and records the action
(``server_tasks``), then hands over: a move to the super-conductor (which makes the migration
record, parks the source allocation on it, schedules and binds), a confirm to the source host
(which drops the source), a revert to the destination host (which hands back to the source).
A hand-over that cannot be sent puts the state back and answers 503-like ComputeError.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import actions, exceptions, quotas, server_tasks, servers
from berth.compute.cells import Cell
from berth.compute.db import flavors, migrations, services
from berth.compute.db.quotas import ServerSize
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

MIGRATE = "migrate"
RESIZE = "resize"
CONFIRM_RESIZE = "confirmResize"
REVERT_RESIZE = "revertResize"
LIVE_MIGRATION = "live-migration"
MIGRATING = "migrating"
# The task a move starts in, as Nova's (the server shows RESIZE).
RESIZE_PREP = "resize_prep"
RESIZE_REVERTING = "resize_reverting"
# A server may move while it runs or while it is stopped.
MOVABLE = ("active", "stopped")


def migrate(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    host: str | None,
    cross_cell: bool = False,
) -> None:
    """Move the server to another host of its cell (``host`` if given), with its flavor; to
    another cell when ``cross_cell`` and its own has no room."""
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=MIGRATE, task_state=RESIZE_PREP, vm_states=MOVABLE,
        check=_target_check(service, server_uuid, host),
    )  # fmt: skip
    _hand_to_conductor(service, context, started, None, host, False, cross_cell)


def live_migrate(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    host: str | None,
) -> None:
    """Move the running server to another host of its cell (``host`` if given) without
    stopping it."""
    started = server_tasks.start(
        service, context, server_uuid, may_see, action=LIVE_MIGRATION, task_state=MIGRATING,
        vm_states=("active", "paused"), check=_target_check(service, server_uuid, host),
    )  # fmt: skip
    try:
        service.conductor.live_migrate_server(started.uuid, host, context.request_id)
    except BusError:
        LOG.exception("could not cast live_migrate_server for %s", started.uuid)
        server_tasks.undo(service, started, MIGRATING)
        raise exceptions.ComputeError(
            "The conductor could not be reached; the server was not moved."
        ) from None


def _target_check(
    service: ComputeService, server_uuid: str, host: str | None
) -> Callable[[Cell, RowMapping], None]:
    """Refuses a named host that is the server's own or no compute host of its cell."""

    def check(cell: Cell, row: RowMapping) -> None:
        if host is None:
            return
        if host == row["host"]:
            raise exceptions.BadRequest(
                f"The target host can't be the same one: instance {server_uuid} is on {host}."
            )
        with service.cells.database(cell).read() as conn:
            computes = services.list_services(conn, binary="nova-compute")
        if not any(found["host"] == host for found in computes):
            raise exceptions.BadRequest(f"Compute host {host} could not be found.")

    return check


def resize(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    flavor_ref: str,
    cross_cell: bool = False,
    auto_disk_config: bool | None = None,
) -> None:
    """Move the server to a host that can give it the new flavor (its own host too, when
    ``allow_resize_to_same_host`` is on); ``auto_disk_config``, when given, is the disk
    config it takes (OS-DCF:diskConfig)."""
    with service.api_db.read() as conn:
        flavor = servers.requested_flavor(conn, context, flavor_ref)

    def check(_cell: Cell, row: RowMapping) -> None:
        old = row["flavor"]
        if str(old["id"]) == str(flavor["id"]):
            raise exceptions.BadRequest("When resizing, instances must change flavor!")
        if flavor["root_gb"] < old["root_gb"]:
            raise exceptions.BadRequest(
                f"Resizing to a smaller root disk ({flavor['root_gb']} GiB, from "
                f"{old['root_gb']} GiB) is not allowed."
            )
        with service.api_db.write() as conn:
            quotas.admit_resize(
                conn, service.cells, (row["project_id"], row["user_id"]),
                ServerSize(vcpus=old["vcpus"], memory_mb=old["memory_mb"]),
                ServerSize(vcpus=flavor["vcpus"], memory_mb=flavor["memory_mb"]),
            )  # fmt: skip

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=RESIZE, task_state=RESIZE_PREP, vm_states=MOVABLE, check=check,
        values={} if auto_disk_config is None else {"auto_disk_config": auto_disk_config},
    )  # fmt: skip
    same_host = service.settings.allow_resize_to_same_host
    _hand_to_conductor(service, context, started, flavor, None, same_host, cross_cell)


def confirm_resize(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    """Keep the server where it moved: the source host drops its copy and the allocation the
    migration holds."""
    cell, row = server_tasks.find(service, context, server_uuid, may_see, CONFIRM_RESIZE)
    migration = _resized(service, cell, row, CONFIRM_RESIZE)
    with service.cells.database(cell).write() as conn:
        if not migrations.update(conn, migration["uuid"], {"status": "confirming"}, ["finished"]):
            raise exceptions.Conflict(f"Instance {server_uuid} is being confirmed or reverted.")
        actions.begin(
            conn, server_uuid, CONFIRM_RESIZE, context.request_id,
            context.user_id or "", context.project_id or "",
        )  # fmt: skip
    try:
        if migration["cross_cell_move"]:
            service.conductor.confirm_cross_cell_resize(server_uuid, migration["uuid"])
        else:
            service.cell_rpc.host(cell, migration["source_compute"]).confirm_resize(
                server_uuid, migration["uuid"]
            )
    except BusError:
        LOG.exception("could not cast confirm_resize for %s", server_uuid)
        with service.cells.database(cell).write() as conn:
            migrations.update(conn, migration["uuid"], {"status": "finished"}, ["confirming"])
        raise _unreachable(migration["source_compute"]) from None


def revert_resize(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    """Go back to the source host: the destination drops its copy and hands over to the
    source, which takes back its allocation, bindings and flavor."""
    found: dict[str, RowMapping] = {}

    def check(cell: Cell, row: RowMapping) -> None:
        found["migration"] = _resized(service, cell, row, REVERT_RESIZE)

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=REVERT_RESIZE, task_state=RESIZE_REVERTING, vm_states=("resized",), check=check,
    )  # fmt: skip
    migration = found["migration"]
    with service.cells.database(started.cell).write() as conn:
        if not migrations.update(conn, migration["uuid"], {"status": "reverting"}, ["finished"]):
            server_tasks.undo(service, started, RESIZE_REVERTING)
            raise exceptions.Conflict(f"Instance {server_uuid} is being confirmed or reverted.")
    try:
        if migration["cross_cell_move"]:
            service.conductor.revert_cross_cell_resize(server_uuid, migration["uuid"])
        else:
            service.cell_rpc.host(started.cell, migration["dest_compute"]).revert_resize(
                server_uuid, migration["uuid"]
            )
    except BusError:
        LOG.exception("could not cast revert_resize for %s", server_uuid)
        with service.cells.database(started.cell).write() as conn:
            migrations.update(conn, migration["uuid"], {"status": "finished"}, ["reverting"])
        server_tasks.undo(service, started, RESIZE_REVERTING)
        raise _unreachable(migration["dest_compute"]) from None


def _hand_to_conductor(
    service: ComputeService,
    context: RequestContext,
    started: server_tasks.Started,
    flavor: Mapping[str, Any] | None,
    host: str | None,
    same_host: bool,
    cross_cell: bool,
) -> None:
    try:
        service.conductor.migrate_server(
            started.uuid, flavor, host, same_host, context.request_id, cross_cell
        )
    except BusError:
        LOG.exception("could not cast migrate_server for %s", started.uuid)
        server_tasks.undo(service, started, RESIZE_PREP)
        raise exceptions.ComputeError(
            "The conductor could not be reached; the server was not moved."
        ) from None


def _resized(service: ComputeService, cell: Cell, row: RowMapping, action: str) -> RowMapping:
    """The finished migration of a server waiting in VERIFY_RESIZE."""
    if row["vm_state"] != "resized":
        raise exceptions.Conflict(
            f"Cannot '{action}' instance {row['uuid']} while it is in vm_state {row['vm_state']}"
        )
    with service.cells.database(cell).read() as conn:
        migration = migrations.in_progress(conn, row["uuid"])
    if migration is None or migration["status"] != "finished":
        raise exceptions.BadRequest("Instance has not been resized.")
    return migration


def _unreachable(host: str) -> exceptions.ComputeError:
    return exceptions.ComputeError(f"The host {host} could not be reached; nothing was changed.")


def list_migrations(
    service: ComputeService,
    instance_uuid: str | None = None,
    **filters: Any,
) -> list[tuple[RowMapping, dict[str, int | None]]]:
    """Every cell's migrations (of one server, or all), newest first, each with the API
    database ids of its old and new flavors (``old``/``new``; None for a flavor deleted since)."""
    found: list[RowMapping] = []
    for cell in service.cells.cells(include_cell0=False):
        with service.cells.database(cell).read() as conn:
            found += migrations.list_migrations(conn, instance_uuid=instance_uuid, **filters)
    found.sort(key=lambda row: (row["created_at"], row["id"]), reverse=True)
    names = {str(row[key]["id"]) for row in found for key in ("old_flavor", "new_flavor")}
    with service.api_db.read() as conn:
        ids = {name: _flavor_id(conn, name) for name in names}
    return [
        (row, {"old": ids[str(row["old_flavor"]["id"])], "new": ids[str(row["new_flavor"]["id"])]})
        for row in found
    ]


def _flavor_id(conn: Connection, flavorid: str) -> int | None:
    row = flavors.get(conn, flavorid)
    return None if row is None else int(row["id"])

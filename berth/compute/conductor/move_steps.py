"""The steps every move of a server shares (``moves`` and ``cross_cell`` use them; the cell
conductor runs ``reschedule`` and ``finish_revert``): handing a claimed, bound destination over
(``go_to``), and putting everything back on the source (``put_back``), which a failed move and a
revert end with.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.compute import actions
from berth.compute.cells import Cell
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import claims, ports
from berth.compute.db import group_placements, instances, migrations, request_specs
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC
from berth.compute.servers import spec_flavor

LOG = logging.getLogger(__name__)

# Instance actions and their events (the API's action names, Nova's method names).
MIGRATE = "migrate"
RESIZE = "resize"
REVERT_RESIZE = "revertResize"
LIVE_MIGRATION = "live-migration"
SCHEDULE = "conductor_migrate_server"
FINISH_REVERT = "compute_finish_revert_resize"
# The task states of a move before the server runs on its destination.
MOVING = ("resize_prep", "resize_migrating")


def action_of(migration: Mapping[str, Any]) -> str:
    """The instance action a migration's events go under."""
    if migration["migration_type"] == migrations.LIVE_MIGRATION:
        return LIVE_MIGRATION
    return RESIZE if migration["migration_type"] == migrations.RESIZE else MIGRATE


def go_to(
    db: Database,
    cell_rpc: CellRPC,
    cell: Cell,
    instance: Mapping[str, Any],
    migration: Mapping[str, Any],
    selections: Sequence[Selection],
    chosen: int,
    attempts: Sequence[BuildAttempt],
) -> None:
    """The destination is claimed and the ports bound there: record it and hand over."""
    selection = selections[chosen]
    with db.write() as conn:
        record_destination(conn, migration["uuid"], selection, "migrating")
        moving = instances.update(
            conn, instance["uuid"], {"task_state": "resize_migrating"}, MOVING
        )
        if moving:
            actions.step_done(
                conn, instance["uuid"], action_of(migration), SCHEDULE, actions.SUCCESS
            )
    if not moving:
        LOG.info("server %s changed during its move; the move stops here", instance["uuid"])
        return
    LOG.info("server %s moves from %s to %s", instance["uuid"], instance["host"], selection.host)
    cell_rpc.host(cell, selection.host).finish_resize(
        instance["uuid"], migration["uuid"], selections[chosen + 1 :], attempts
    )


def keep_flavor(api_db: Database, instance_uuid: str, flavor: Mapping[str, Any]) -> None:
    """The server's stored RequestSpec with ``flavor``: later moves, unshelve, evacuation and
    heal read the flavor the server has now from it."""
    with api_db.write() as conn:
        document = request_specs.get(conn, instance_uuid)
        if document is None:
            return
        spec = dataclasses.replace(RequestSpec.from_json(document), flavor=spec_flavor(flavor))
        request_specs.save(conn, instance_uuid, spec.to_json())


def record_destination(
    conn: Connection, migration_uuid: str, selection: Selection, status: str
) -> None:
    """The migration headed for ``selection``'s host, in ``status``."""
    migrations.update(conn, migration_uuid, {
        "status": status, "dest_compute": selection.host,
        "dest_node": selection.node, "dest_host": selection.host,
    })  # fmt: skip


def put_back(
    db: Database,
    api_db: Database,
    placement: PlacementClient,
    network: NetworkClient,
    instance: Mapping[str, Any],
    migration: Mapping[str, Any],
    failure: str | None,
    failed_host: str | None = None,
    diagnosis: Diagnosis | None = None,
) -> None:
    """The server back on its source as before the move: its source allocation (replacing what
    it holds at the destination), its ports bound there with their old providers, its group
    record, its host and flavor. ``failure`` says why the move failed (None: a revert asked
    for it); then the migration is ``error`` and the server keeps a fault (with the scheduler's
    ``diagnosis`` when no host could take it), else ``reverted``."""
    uuid, source = instance["uuid"], migration["source_compute"]
    placement.move_allocations(migration["uuid"], uuid, "INSTANCE")
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    bind_back(network, entries, source, migration["source_port_allocations"])
    group_placements.admit(api_db, uuid, source)
    keep_flavor(api_db, uuid, migration["old_flavor"])
    network_info = ports.refreshed(network, entries)
    with db.write() as conn:
        now = instances.get(conn, uuid, include_deleted=False)
        stopped = now is not None and now["power_state"] == 4
        instances.update(conn, uuid, {
            "host": source, "node": migration["source_node"], "flavor": migration["old_flavor"],
            "vm_state": "stopped" if stopped else "active", "task_state": None,
            "network_info": [entry.to_json() for entry in network_info],
        })  # fmt: skip
        if failure is None:
            migrations.update(conn, migration["uuid"], {"status": "reverted"})
            actions.step_done(conn, uuid, REVERT_RESIZE, FINISH_REVERT, actions.SUCCESS, source)
            return
        migrations.update(conn, migration["uuid"], {"status": "error"})
        instances.add_fault(
            conn, uuid, 500, failure, details=failure, host=failed_host,
            diagnosis=None if diagnosis is None else diagnosis.to_json(),
        )  # fmt: skip
        actions.step_done(
            conn, uuid, action_of(migration), SCHEDULE, actions.ERROR, details=failure
        )
    LOG.info("server %s stays on %s: %s", uuid, source, failure)


def bind_back(
    network: NetworkClient,
    entries: Sequence[PortEntry],
    host: str,
    allocations: Mapping[str, Mapping[str, str]],
) -> None:
    """Every port bound to ``host`` again (its active binding) with the providers it had there."""
    for entry in entries:
        try:
            network.bind(entry.port_id, host, allocations.get(entry.port_id))
        except NetworkError:
            LOG.exception("port %s could not be bound back to %s", entry.port_id, host)


def bound_providers(answered: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Per port, the providers its binding profile names for its request groups."""
    found: dict[str, dict[str, str]] = {}
    for port in answered:
        allocation = (port.get("binding:profile") or {}).get("allocation")
        if isinstance(allocation, dict) and allocation:
            found[port["id"]] = {str(g): str(rp) for g, rp in allocation.items()}
    return found


def reschedule(
    cell: Cell,
    db: Database,
    api_db: Database,
    placement: PlacementClient,
    network: NetworkClient,
    cell_rpc: CellRPC,
    instance_uuid: str,
    migration_uuid: str,
    failed_host: str,
    reason: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """The cell conductor's part when a destination failed: release it, claim and bind the next
    alternate that takes the server, or put it back on its source."""
    tried = [*attempts, BuildAttempt(failed_host, reason)]
    with db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if instance is None or migration is None or instance["task_state"] != "resize_migrating":
        LOG.info("server %s is no longer moving; nothing to reschedule", instance_uuid)
        return
    with db.write() as conn:
        # The failure counts against the host (the build-failure weigher), as a build's does.
        instances.add_fault(conn, instance_uuid, 500, reason, details=reason, host=failed_host)
    placement.release(instance_uuid)
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    chosen = claims.bind_first(
        api_db, placement, network, instance, entries, alternates, tried, first_claimed=False
    )
    if chosen is None:
        message = failed_everywhere(tried)
        put_back(db, api_db, placement, network, instance, migration, message, failed_host)
        return
    go_to(db, cell_rpc, cell, {**instance, "task_state": "resize_migrating"}, migration,
          alternates, chosen, tried)  # fmt: skip


def finish_revert(
    db: Database,
    api_db: Database,
    placement: PlacementClient,
    network: NetworkClient,
    instance_uuid: str,
    migration_uuid: str,
) -> None:
    """The cell conductor's part of a revert, once the destination dropped its copy."""
    with db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if instance is None or migration is None or migration["status"] != "reverting":
        LOG.info("server %s is no longer reverting; nothing to do", instance_uuid)
        return
    put_back(db, api_db, placement, network, instance, migration, None)

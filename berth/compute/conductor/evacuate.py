"""Evacuation: the conductors' side (docs/compute.md, "Evacuating a server").

The source host is down and takes no part. Who holds which allocation, step by step:

1. ``evacuate_server`` (the super-conductor): a migration row of type ``evacuation``
   (``accepted``) records the source host and, per port, the providers its request groups use
   there. The server's allocation moves to the migration's consumer in one atomic write, so the
   failed host stays claimed (its guest may still exist) while the scheduler claims a
   destination for the server's own consumer, with the ports' current requests, in the
   server's cell, the source ruled out. The ports are bound to the destination with the chosen
   candidate's providers (the next alternate on a refusal); the migration is ``pre-migrating``
   and ``evacuate_instance`` goes to the destination host.
2. The destination rebuilds the server (``berth.compute.host.evacuate``): the migration is
   ``done`` and still holds the source until the failed host comes back, which destroys its
   copy, gives back its virtual functions and the migration's allocation (``completed``). A
   spawn failure comes back here as ``evacuate_failed`` (the cell conductor): the next
   alternate, or :func:`put_back`.
3. :func:`put_back`: the source allocation returns to the server (replacing what it holds at
   a destination), the ports are bound to the source with their old providers, the migration is
   ``error``. A server no host would take keeps its state, as Nova leaves it; one whose every
   destination failed is in ERROR. Both keep a fault and their action is in Error.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute import actions
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import claims, move_steps, ports
from berth.compute.db import cells as cell_store
from berth.compute.db import group_placements, instances, migrations, request_specs
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import Destination, RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC, NoValidHost, SchedulerAPI, ServiceUnreachable

LOG = logging.getLogger(__name__)

# The instance action and its events (Nova's names).
EVACUATE = "evacuate"
SCHEDULE = "conductor_rebuild_server"
REBUILD = "compute_rebuild_instance"
REBUILDING = "rebuilding"
# The migration's statuses, as Nova's: made, headed for a destination, rebuilt there, and
# (once the failed host came back and gave back its copy) completed.
ACCEPTED = "accepted"
PRE_MIGRATING = "pre-migrating"
DONE = "done"
COMPLETED = "completed"


@dataclasses.dataclass(frozen=True)
class Services:
    """What an evacuation reaches: the API database, Placement, network, the cells' buses."""

    api_db: Database
    placement: PlacementClient
    network: NetworkClient
    cell_rpc: CellRPC


def evacuate_server(
    services: Services,
    cells: CellRegistry,
    scheduler: SchedulerAPI,
    instance_uuid: str,
    host: str | None,
) -> None:
    """The super-conductor's step (1 in the module)."""
    started = utcnow()
    with services.api_db.read() as conn:
        mapping = cell_store.get_instance_mapping(conn, instance_uuid)
        document = request_specs.get(conn, instance_uuid)
    cell = cells.cell(mapping["cell_uuid"]) if mapping and mapping["cell_uuid"] else None
    if cell is None or document is None:
        LOG.info("server %s is gone; nothing to evacuate", instance_uuid)
        return
    db = cells.database(cell)
    with db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
    if instance is None or instance["task_state"] != REBUILDING:
        LOG.info("server %s is no longer waiting to be evacuated", instance_uuid)
        return
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    try:
        answered = [services.network.port(entry.port_id) for entry in entries]
        spec = _spec(services, cells, cell, instance, document, answered, host)
    except (ports.PortsUnusable, NetworkError) as exc:
        _refuse(db, instance, f"Evacuation failed: {exc}")
        return
    with db.write() as conn:
        migration = migrations.create(
            conn, instance, migrations.EVACUATION, ACCEPTED, instance["flavor"],
            move_steps.bound_providers(answered),
        )  # fmt: skip
    if not services.placement.move_allocations(instance_uuid, migration["uuid"], "MIGRATION"):
        with db.write() as conn:
            migrations.update(conn, migration["uuid"], {"status": "error"})
        _refuse(db, instance, "Evacuation failed: the server holds no allocation; heal it first.")
        return
    try:
        _schedule(services, cell, db, scheduler, instance, migration, spec, entries, started)
    except Exception:
        LOG.exception("evacuation of %s failed unexpectedly", instance_uuid)
        message = "Evacuation failed: an unexpected error; the conductor's log has it."
        put_back(db, services, instance, migration, message)


def _schedule(
    services: Services,
    cell: Cell,
    db: Database,
    scheduler: SchedulerAPI,
    instance: RowMapping,
    migration: RowMapping,
    spec: RequestSpec,
    entries: Sequence[PortEntry],
    started: dt.datetime,
) -> None:
    """A destination claimed for the server and its ports bound there, then the hand-over; or
    the server put back."""
    instance_uuid = instance["uuid"]
    try:
        (selections,) = scheduler.select_destinations(spec)
    except (NoValidHost, ServiceUnreachable) as exc:
        diagnosis = exc.diagnosis if isinstance(exc, NoValidHost) else None
        put_back(db, services, instance, migration, str(exc), diagnosis=diagnosis)
        return
    attempts: list[BuildAttempt] = []
    chosen = claims.bind_first(
        services.api_db, services.placement, services.network, instance, entries, selections,
        attempts,
    )  # fmt: skip
    if chosen is None:
        put_back(db, services, instance, migration, failed_everywhere(attempts))
        return
    with db.write() as conn:
        actions.step_done(
            conn, instance_uuid, EVACUATE, SCHEDULE, actions.SUCCESS, start_time=started
        )
    _go_to(db, services.cell_rpc, cell, instance, migration, selections, chosen, attempts)


def evacuate_failed(
    services: Services,
    cell: Cell,
    db: Database,
    instance_uuid: str,
    migration_uuid: str,
    failed_host: str,
    reason: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """The cell conductor's step when a destination failed: release it, claim and bind the next
    alternate that takes the server, or put it back on its source in ERROR."""
    tried = [*attempts, BuildAttempt(failed_host, reason)]
    with db.read() as conn:
        instance = instances.get(conn, instance_uuid, include_deleted=False)
        migration = migrations.get(conn, migration_uuid)
    if (
        instance is None
        or migration is None
        or instance["task_state"] != REBUILDING
        or migration["status"] != PRE_MIGRATING
    ):
        LOG.info("server %s is no longer being evacuated; nothing to retry", instance_uuid)
        return
    with db.write() as conn:
        # The failure counts against the host (the build-failure weigher), as a build's does.
        instances.add_fault(conn, instance_uuid, 500, reason, details=reason, host=failed_host)
    services.placement.release(instance_uuid)
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    chosen = claims.bind_first(
        services.api_db, services.placement, services.network, instance, entries, alternates,
        tried, first_claimed=False,
    )  # fmt: skip
    if chosen is None:
        put_back(
            db, services, instance, migration, failed_everywhere(tried), failed_host, error=True
        )
        return
    _go_to(db, services.cell_rpc, cell, instance, migration, alternates, chosen, tried)


def _spec(
    services: Services,
    cells: CellRegistry,
    cell: Cell,
    instance: RowMapping,
    document: Mapping[str, Any],
    answered: Sequence[Mapping[str, Any]],
    host: str | None,
) -> RequestSpec:
    """The server's spec for the evacuation: its ports' requests as they are now, its cell (and
    host, if named), its failed host ruled out."""
    spec = dataclasses.replace(
        RequestSpec.from_json(document),
        instance_uuids=(instance["uuid"],),
        ports=tuple(ports.requests(services.network, answered)),
        ignore_hosts=frozenset({instance["host"]}),
        destination=Destination(host=host, cell_uuid=cell.uuid),
    )
    return claims.with_group_hosts(services.api_db, cells, spec)


def _go_to(
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
        move_steps.record_destination(conn, migration["uuid"], selection, PRE_MIGRATING)
        current = instances.get(conn, instance["uuid"], include_deleted=False)
    if current is None or current["task_state"] != REBUILDING:
        LOG.info("server %s changed during its evacuation; it stops here", instance["uuid"])
        return
    LOG.info(
        "server %s is evacuated from %s to %s", instance["uuid"], instance["host"], selection.host
    )
    cell_rpc.host(cell, selection.host).evacuate_instance(
        instance["uuid"], migration["uuid"], selections[chosen + 1 :], attempts
    )


def put_back(
    db: Database,
    services: Services,
    instance: Mapping[str, Any],
    migration: Mapping[str, Any],
    failure: str,
    failed_host: str | None = None,
    error: bool = False,
    diagnosis: Diagnosis | None = None,
) -> None:
    """The evacuation failed: the server back on its source as before (in ERROR when ``error``),
    holding its source allocation (replacing what it holds at a destination), its ports bound
    there with their old providers; the migration ``error``, a fault (with the scheduler's
    ``diagnosis`` when no host could take it), the action in Error."""
    uuid, source = instance["uuid"], migration["source_compute"]
    services.placement.move_allocations(migration["uuid"], uuid, "INSTANCE")
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    move_steps.bind_back(services.network, entries, source, migration["source_port_allocations"])
    group_placements.admit(services.api_db, uuid, source)
    network_info = ports.refreshed(services.network, entries)
    with db.write() as conn:
        instances.update(conn, uuid, {
            "host": source, "node": migration["source_node"], "task_state": None,
            "vm_state": "error" if error else instance["vm_state"],
            "network_info": [entry.to_json() for entry in network_info],
        }, expected_task_states=[REBUILDING])  # fmt: skip
        migrations.update(conn, migration["uuid"], {"status": "error"})
        instances.add_fault(
            conn, uuid, 500, failure, details=failure, host=failed_host,
            diagnosis=None if diagnosis is None else diagnosis.to_json(),
        )  # fmt: skip
        actions.step_done(conn, uuid, EVACUATE, SCHEDULE, actions.ERROR, details=failure)
    LOG.info("server %s stays on %s: %s", uuid, source, failure)


def _refuse(db: Database, instance: RowMapping, message: str) -> None:
    """The evacuation cannot start: the server stays as it is, the action says why."""
    LOG.info("server %s cannot be evacuated: %s", instance["uuid"], message)
    with db.write() as conn:
        instances.update(conn, instance["uuid"], {"task_state": None}, [REBUILDING])
        instances.add_fault(conn, instance["uuid"], 400, message, details=message)
        actions.step_done(
            conn, instance["uuid"], EVACUATE, SCHEDULE, actions.ERROR, details=message
        )

"""Unshelving a server: the conductors' part (the API set ``unshelving`` and cast to the
super-conductor).

A SHELVED server still has its host, its allocation and its bindings: the host powers it on. A
SHELVED_OFFLOADED one holds nothing and is placed again as a build is: its ports are read again
(their resource requests may have changed while it was shelved), its RequestSpec gets them, its
zone and its cell (it stays in the cell it was in, as Nova's does unless moved across cells), one
scheduler call claims the chosen host, the ports are bound to it with the providers the mapping
names (the next alternate on a refusal), the Instance gets that host and the host spawns it. A
failed spawn comes back to the cell conductor (:func:`retry`), which moves the claim to the next
alternate. When no host takes it, the server is SHELVED_OFFLOADED again, holding nothing (no
allocation, no binding), with a fault and its action in Error, as Nova leaves it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from sqlalchemy.engine import RowMapping

from berth.common.db import Database
from berth.compute import actions
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import ports
from berth.compute.conductor.claims import bind_first, with_group_hosts
from berth.compute.db import cells as cell_store
from berth.compute.db import group_placements, instances, request_specs
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import Destination, RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC, NoValidHost, SchedulerAPI, ServiceUnreachable

LOG = logging.getLogger(__name__)

UNSHELVING = "unshelving"


@dataclasses.dataclass(frozen=True)
class Services:
    """What unshelving reaches: the API database, Placement, network, the cells' buses."""

    api_db: Database
    placement: PlacementClient
    network: NetworkClient
    cell_rpc: CellRPC


def unshelve(
    services: Services, cells: CellRegistry, scheduler: SchedulerAPI, instance_uuid: str
) -> None:
    """The super-conductor's step (see the module)."""
    found = _instance(services, cells, instance_uuid)
    if found is None:
        return
    cell, row = found
    if row["vm_state"] == "shelved":
        services.cell_rpc.host(cell, row["host"]).unshelve_instance(instance_uuid, [], [])
        return
    db = cells.database(cell)
    with db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, actions.UNSHELVE, actions.UNSHELVE_SCHEDULE
        )
    made = [PortEntry.from_json(entry) for entry in row["network_info"]]
    try:
        spec = with_group_hosts(services.api_db, cells, _spec(services, cell, row, made))
        selections = scheduler.select_destinations(spec)[0]
    except (NoValidHost, ServiceUnreachable, ports.PortsUnusable, NetworkError) as exc:
        # A scheduler that timed out may still claim: the release is by consumer.
        diagnosis = exc.diagnosis if isinstance(exc, NoValidHost) else None
        _back_to_offloaded(
            services, db, instance_uuid, made, f"Unshelve failed: {exc}", step, diagnosis
        )
        return
    except Exception:
        LOG.exception("unshelve of %s failed unexpectedly", instance_uuid)
        message = "Unshelve failed: an unexpected error; the conductor's log has it."
        _back_to_offloaded(services, db, instance_uuid, made, message, step)
        return
    attempts: list[BuildAttempt] = []
    _place(services, cell, db, row, made, selections, attempts, step, first_claimed=True)


def retry(
    services: Services,
    cell: Cell,
    db: Database,
    instance_uuid: str,
    failed_host: str,
    reason: str,
    alternates: Sequence[Selection],
    attempts: Sequence[BuildAttempt],
) -> None:
    """The cell conductor's step: the spawn failed on ``failed_host``; the next alternate."""
    tried = [*attempts, BuildAttempt(failed_host, reason)]
    with db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != UNSHELVING:
        LOG.info("server %s changed during its unshelve; nothing to retry", instance_uuid)
        return
    made = [PortEntry.from_json(entry) for entry in row["network_info"]]
    with db.write() as conn:
        # The host's failure counts against it (the build-failure weigher) for a while.
        instances.add_fault(conn, instance_uuid, 500, reason, details=reason, host=failed_host)
    services.placement.release(instance_uuid)
    for entry in made:
        services.network.unbind(entry.port_id)
    _place(services, cell, db, row, made, alternates, tried, None, first_claimed=False)


def _instance(
    services: Services, cells: CellRegistry, instance_uuid: str
) -> tuple[Cell, RowMapping] | None:
    """The server's cell and Instance, if it is still being unshelved."""
    with services.api_db.read() as conn:
        mapping = cell_store.get_instance_mapping(conn, instance_uuid)
    cell = cells.cell(mapping["cell_uuid"]) if mapping and mapping["cell_uuid"] else None
    if cell is None:
        LOG.info("server %s has no cell; nothing to unshelve", instance_uuid)
        return None
    with cells.database(cell).read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["task_state"] != UNSHELVING:
        LOG.info("server %s is not being unshelved (deleted?)", instance_uuid)
        return None
    return cell, row


def _spec(
    services: Services, cell: Cell, row: RowMapping, made: Sequence[PortEntry]
) -> RequestSpec:
    """The server's RequestSpec with its ports' current requests, its zone and its cell."""
    uuid = row["uuid"]
    with services.api_db.read() as conn:
        document = request_specs.get(conn, uuid)
    if document is None:
        raise ports.PortsUnusable(f"the request spec of server {uuid} is gone")
    answered = [services.network.port(entry.port_id) for entry in made]
    stored = RequestSpec.from_json(document)
    wanted = stored.destination or Destination()
    spec = dataclasses.replace(
        stored,
        instance_uuids=(uuid,),
        ports=tuple(ports.requests(services.network, answered)),
        # The zone the server was booted into (asked for); none asked, any zone (as Nova).
        availability_zone=stored.availability_zone or row["availability_zone"],
        ignore_hosts=frozenset(),
        destination=dataclasses.replace(wanted, cell_uuid=cell.uuid),
    )
    # Kept with the ports' requests of now, without this unshelve's cell.
    kept = dataclasses.replace(spec, destination=stored.destination)
    with services.api_db.write() as conn:
        request_specs.save(conn, uuid, kept.to_json())
    return spec


def _place(
    services: Services,
    cell: Cell,
    db: Database,
    row: RowMapping,
    made: Sequence[PortEntry],
    selections: Sequence[Selection],
    attempts: list[BuildAttempt],
    step: int | None,
    first_claimed: bool,
) -> None:
    """Keep the first selection that takes the server and its ports, and cast the spawn there;
    back to SHELVED_OFFLOADED when none does."""
    uuid = row["uuid"]
    owner = {"uuid": uuid, "project_id": row["project_id"], "user_id": row["user_id"]}
    try:
        chosen = bind_first(
            services.api_db, services.placement, services.network, owner, made, selections,
            attempts, first_claimed=first_claimed,
        )  # fmt: skip
    except NetworkError as exc:
        # Not a refusal of one host (a port deleted while the server was shelved, say).
        _back_to_offloaded(services, db, uuid, made, f"Unshelve failed: {exc}", step)
        return
    if chosen is None:
        message = failed_everywhere(attempts).replace("Build failed", "Unshelve failed", 1)
        _back_to_offloaded(services, db, uuid, made, message, step)
        return
    selection = selections[chosen]
    network_info = ports.refreshed(services.network, made)
    with db.write() as conn:
        placed = instances.update(
            conn,
            uuid,
            {
                "host": selection.host,
                "node": selection.node,
                "network_info": [entry.to_json() for entry in network_info],
            },
            expected_task_states=[UNSHELVING],
            expected_vm_states=["shelved_offloaded"],
        )
        if step is not None:
            actions.step_ended(conn, step, actions.SUCCESS if placed else actions.ERROR)
    if not placed:
        # Deleted while it was placed: the delete gave back what it saw; give back the rest.
        LOG.info("server %s changed while it was unshelved; releasing its new host", uuid)
        services.placement.release(uuid)
        for entry in made:
            services.network.unbind(entry.port_id)
        return
    LOG.info("server %s unshelves on %s", uuid, selection.host)
    services.cell_rpc.host(cell, selection.host).unshelve_instance(
        uuid, selections[chosen + 1 :], attempts
    )


def _back_to_offloaded(
    services: Services,
    db: Database,
    instance_uuid: str,
    made: Sequence[PortEntry],
    message: str,
    step: int | None,
    diagnosis: Diagnosis | None = None,
) -> None:
    """SHELVED_OFFLOADED holding nothing: no allocation, no binding, no host; a fault (with the
    scheduler's ``diagnosis`` when no host could take it) and the unshelve action in Error."""
    LOG.info("server %s: %s", instance_uuid, message)
    services.placement.release(instance_uuid)
    for entry in made:
        services.network.unbind(entry.port_id)
    with services.api_db.write() as conn:
        # No host after all: its group stops counting it anywhere.
        group_placements.release(conn, instance_uuid)
    with db.write() as conn:
        instances.update(
            conn,
            instance_uuid,
            {"vm_state": "shelved_offloaded", "task_state": None, "host": None, "node": None},
            expected_task_states=[UNSHELVING],
        )
        instances.add_fault(
            conn, instance_uuid, 500, message, details=message,
            diagnosis=None if diagnosis is None else diagnosis.to_json(),
        )  # fmt: skip
        if step is not None:
            actions.step_ended(conn, step, actions.ERROR, message)
        else:
            # The host's event is in Error already; the action says so too.
            actions.step_done(
                conn, instance_uuid, actions.UNSHELVE, actions.UNSHELVE_SCHEDULE,
                actions.ERROR, details=message,
            )  # fmt: skip

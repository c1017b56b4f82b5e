"""Builds that stopped half way, and what each still holds outside the compute databases.

A build ends ACTIVE, or in ERROR with everything given back, unless a process dies in the
middle. A super-conductor that dies between scheduling and the cast to the host leaves a
BuildRequest behind; one that dies after it created the Instance but before it deleted the
BuildRequest leaves both; a host agent or cell conductor that dies leaves an Instance
``building``. Each still holds what the build took: an allocation in Placement, and ports that
may be bound and have addresses. The audit reports such builds (``audit``); the recovery ends
them (``conductor/recovery``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, created_by_compute
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import build_queue, build_requests, instances

# A build that nothing has happened to for this long is stuck (a simulated host spawns in
# seconds; a real one in a minute or two).
STUCK_AFTER = dt.timedelta(minutes=10)


@dataclass(frozen=True)
class StuckBuild:
    uuid: str
    # When anything last happened to it.
    since: dt.datetime
    # Its BuildRequest, if it still has one.
    request: RowMapping | None
    # Its Instance and that Instance's cell, if it has one.
    cell: Cell | None
    instance: RowMapping | None

    def where(self) -> str:
        if self.instance is None or self.cell is None:
            return "a BuildRequest"
        row = self.instance
        host = f"on {row['host']}" if row["host"] else "without a host"
        return f"building in {self.cell.name} {host} (task {row['task_state']})"


def find(
    api_db: Database,
    cells: CellRegistry,
    older_than: dt.timedelta = STUCK_AFTER,
    now: dt.datetime | None = None,
) -> list[StuckBuild]:
    """Every build that nothing has happened to for ``older_than``, oldest first."""
    cutoff = (now or utcnow()) - older_than
    found: dict[str, StuckBuild] = {}
    every_cell = cells.cells()
    for cell in every_cell:
        with cells.database(cell).read() as conn:
            rows = instances.list_instances(conn, vm_state="building", changed_before=cutoff)
        for row in rows:
            since = row["updated_at"] or row["created_at"]
            found[row["uuid"]] = StuckBuild(row["uuid"], since, None, cell, row)
    with api_db.read() as conn:
        requests = build_requests.list_build_requests(conn, created_before=cutoff)
        # Waiting for room by request, not stuck: the queue ends them at their deadline.
        queued = {row["instance_uuid"] for row in build_queue.list_queued(conn)}
    for request in requests:
        uuid = request["instance_uuid"]
        if uuid in queued:
            continue
        known = found.get(uuid)
        cell, row = (known.cell, known.instance) if known else _building(cells, every_cell, uuid)
        found[uuid] = StuckBuild(uuid, request["created_at"], request, cell, row)
    return sorted(found.values(), key=lambda build: (build.since, build.uuid))


def _building(
    cells: CellRegistry, every_cell: list[Cell], uuid: str
) -> tuple[Cell | None, RowMapping | None]:
    """The building Instance of a server that still has its BuildRequest: there is one when its
    conductor died after making it and before deleting the BuildRequest. (One in ERROR in cell0
    was left by a burial that died half way: that server is still only its BuildRequest.)"""
    for cell in every_cell:
        with cells.database(cell).read() as conn:
            rows = instances.list_instances(conn, vm_state="building", uuids=[uuid])
        if rows:
            return cell, rows[0]
    return None, None


@dataclass(frozen=True)
class Holdings:
    """What a server holds outside the compute databases, as those services tell it."""

    # Provider uuid -> resource class -> amount.
    allocations: Mapping[str, Mapping[str, int]]
    # The compute-owned ports whose device_id is the server, as the network service gives them.
    ports: tuple[Mapping[str, Any], ...]

    def describe(self, provider_names: Mapping[str, str]) -> str:
        """``allocation on cn1 (MEMORY_MB=512, VCPU=1); ports 4f1c... (made by compute, bound
        to cn1)``, or ``nothing``."""
        parts = []
        if self.allocations:
            held = "; ".join(
                f"{provider_names.get(rp, rp)} ({_amounts(resources)})"
                for rp, resources in sorted(self.allocations.items())
            )
            parts.append(f"allocation on {held}")
        if self.ports:
            parts.append("ports " + ", ".join(_port(port) for port in self.ports))
        return "; ".join(parts) or "nothing"


def holdings(placement: PlacementClient, network: NetworkClient, uuid: str) -> Holdings:
    """The server's allocation and its ports, found by consumer and by ``device_id``: what the
    conductor that made them knew of them may have died with it."""
    allocations = placement.allocations(uuid)["allocations"]
    ports = [
        port
        for port in network.ports(device_id=uuid)
        if str(port["device_owner"]).startswith("compute:")
    ]
    return Holdings(
        allocations={rp: dict(held["resources"]) for rp, held in allocations.items()},
        ports=tuple(sorted(ports, key=lambda port: str(port["id"]))),
    )


def _amounts(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{rc}={amount}" for rc, amount in sorted(resources.items()))


def _port(port: Mapping[str, Any]) -> str:
    made = "made by compute" if created_by_compute(port) else "the user's"
    host = port.get("binding:host_id") or ""
    return f"{port['id']} ({made}, {f'bound to {host}' if host else 'unbound'})"

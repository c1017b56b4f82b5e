"""Finding what a failure path failed to give back (DESIGN.md, "Invariants").

Every allocation in Placement must belong to a live server on the host that holds it, or to a
move under way (or an evacuation whose failed host has not come back) on its source host; every
port the compute service owns (``device_owner`` ``compute:*``) must belong to a live server and
be bound to its host (a shelved-offloaded server keeps its ports, unbound, and holds no
allocation); no provider may be used past its capacity; no build may stay stuck (nothing
happened to it for ``stuck_after``: see ``stuck``). The audit reads all three services and
reports each leak as a line an operator can act on, a stuck build with what it holds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from berth.compute import stuck
from berth.compute.cells import CellRegistry
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import compute_nodes, instances, migrations


@dataclass
class AuditReport:
    leaked_allocations: list[str] = field(default_factory=list)
    orphan_ports: list[str] = field(default_factory=list)
    wrong_bindings: list[str] = field(default_factory=list)
    over_capacity: list[str] = field(default_factory=list)
    stuck_builds: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.leaked_allocations
            or self.orphan_ports
            or self.wrong_bindings
            or self.over_capacity
            or self.stuck_builds
        )

    def lines(self) -> list[str]:
        return [
            *(f"leaked allocation: {x}" for x in self.leaked_allocations),
            *(f"orphan port: {x}" for x in self.orphan_ports),
            *(f"wrong binding: {x}" for x in self.wrong_bindings),
            *(f"over capacity: {x}" for x in self.over_capacity),
            *(f"stuck build: {x}" for x in self.stuck_builds),
        ]


def audit(
    cells: CellRegistry,
    placement: PlacementClient,
    network: NetworkClient,
    stuck_after: dt.timedelta = stuck.STUCK_AFTER,
    now: dt.datetime | None = None,
) -> AuditReport:
    report = AuditReport()
    live, hosts, offloaded = _live_servers(cells)
    moving = _moves(cells)
    providers = placement.client.get("/resource_providers").json()["resource_providers"]
    root_name = {p["uuid"]: p["name"] for p in providers}
    root_of = {p["uuid"]: root_name.get(p["root_provider_uuid"], "") for p in providers}
    for provider in providers:
        uuid = provider["uuid"]
        held = placement.client.get(f"/resource_providers/{uuid}/allocations").json()["allocations"]
        for consumer in held:
            server = live.get(consumer)
            if consumer in moving:
                report.leaked_allocations += _migration_leak(
                    moving[consumer], provider["name"], root_of[uuid]
                )
            elif consumer in offloaded:
                report.leaked_allocations.append(
                    f"{consumer} on {provider['name']}: the server is shelved offloaded"
                )
            elif server is None:
                report.leaked_allocations.append(
                    f"{consumer} on {provider['name']}: no live server"
                )
            elif root_of[uuid] in hosts and root_of[uuid] != server["host"]:
                report.leaked_allocations.append(
                    f"{consumer} on {provider['name']}: the server is on {server['host']}"
                )
        report.over_capacity += _over(placement, provider)
    for port in network.ports():
        if not str(port["device_owner"]).startswith("compute:"):
            continue
        server = live.get(port["device_id"])
        if port["device_id"] in offloaded:
            if port["binding:host_id"]:
                report.wrong_bindings.append(
                    f"{port['id']}: bound to {port['binding:host_id']}, server shelved offloaded"
                )
        elif server is None:
            report.orphan_ports.append(
                f"{port['id']}: owned by {port['device_id']}, no live server"
            )
        elif port["binding:host_id"] and port["binding:host_id"] != server["host"]:
            report.wrong_bindings.append(
                f"{port['id']}: bound to {port['binding:host_id']}, server on {server['host']}"
            )
    for build in stuck.find(cells.api_db, cells, stuck_after, now):
        held = stuck.holdings(placement, network, build.uuid).describe(root_name)
        report.stuck_builds.append(
            f"{build.uuid}: {build.where()} since {build.since:%Y-%m-%d %H:%M:%S}, holds {held}"
        )
    return report


def _live_servers(cells: CellRegistry) -> tuple[dict[str, Any], set[str], set[str]]:
    """Servers that may hold things (not deleted, on a host; cell0 holds none), every compute
    host (a provider tree rooted elsewhere, a sharing one, belongs to no host), and the
    shelved-offloaded servers (which own their ports but hold nothing)."""
    found: dict[str, Any] = {}
    hosts: set[str] = set()
    offloaded: set[str] = set()
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            hosts |= {node["host"] for node in compute_nodes.list_nodes(conn)}
            for row in instances.list_instances(conn):
                if row["host"]:
                    found[row["uuid"]] = row
                elif row["vm_state"] == "shelved_offloaded":
                    offloaded.add(row["uuid"])
    return found, hosts, offloaded


def _moves(cells: CellRegistry) -> dict[str, Any]:
    """Every migration by its uuid, which is also the consumer of a move's source allocation."""
    found: dict[str, Any] = {}
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            found.update((row["uuid"], row) for row in migrations.list_migrations(conn))
    return found


def _migration_leak(migration: Any, provider: str, host: str) -> list[str]:
    """A migration may hold its source host's resources while its move is under way, and an
    evacuation until its failed host comes back, only."""
    if not migrations.holds_source(migration):
        return [f"{migration['uuid']} on {provider}: migration {migration['status']}"]
    if host != migration["source_compute"]:
        return [f"{migration['uuid']} on {provider}: migration from {migration['source_compute']}"]
    return []


def _over(placement: PlacementClient, provider: dict[str, Any]) -> list[str]:
    uuid = provider["uuid"]
    inventories = placement.client.get(f"/resource_providers/{uuid}/inventories").json()[
        "inventories"
    ]
    usages = placement.client.get(f"/resource_providers/{uuid}/usages").json()["usages"]
    found = []
    for rc, used in usages.items():
        inventory = inventories.get(rc)
        capacity = (
            int((inventory["total"] - inventory["reserved"]) * inventory["allocation_ratio"])
            if inventory
            else 0
        )
        if used > capacity:
            found.append(f"{provider['name']} {rc}: {used} used of {capacity}")
    return found

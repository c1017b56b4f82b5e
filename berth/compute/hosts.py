"""The compute hosts as the API sees them across the cells: their services and compute nodes, the
zones their aggregates put them in, and what the API mirrors into Placement.

Two things an operator changes in the API are mirrored onto the hosts' compute node providers
(a node's uuid is its provider's):

    an aggregate's hosts      the aggregate's uuid is a Placement aggregate of each host's nodes
    a disabled compute service  its nodes carry the trait COMPUTE_STATUS_DISABLED

A mirror adds and removes only its own aggregate or trait, so what the host agent and the network
service put on the same providers stays.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy.engine import Connection, RowMapping

from berth.compute import exceptions
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.placement import PlacementClient, PlacementError, ServiceUnavailable
from berth.compute.db import compute_nodes, services
from berth.compute.db.aggregates import Aggregate

COMPUTE_BINARY: Final = "nova-compute"
DISABLED_TRAIT: Final = "COMPUTE_STATUS_DISABLED"
# The zone of the services that are not compute services (conductors, schedulers).
INTERNAL_ZONE: Final = "internal"


@dataclass(frozen=True, slots=True)
class CellService:
    """A service row and the cell whose database holds it."""

    cell: Cell
    row: RowMapping

    @property
    def is_compute(self) -> bool:
        return is_compute(self.row)


@dataclass(frozen=True, slots=True)
class CellNode:
    """A compute node row, its service's row and the cell whose database holds them."""

    cell: Cell
    row: RowMapping
    service: RowMapping


def is_compute(service: Mapping[str, Any]) -> bool:
    return bool(service["binary"] == COMPUTE_BINARY or service["topic"] == "compute")


# Reading the cells


def all_services(
    cells: CellRegistry, binary: str | None = None, host: str | None = None
) -> list[CellService]:
    """Every service of every cell with hosts (cell0 has none), cell by cell."""
    found = []
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            rows = services.list_services(conn, binary=binary, host=host)
        found += [CellService(cell, row) for row in rows]
    return found


def service_by_uuid(cells: CellRegistry, uuid: str) -> CellService | None:
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            row = services.get_by_uuid(conn, uuid)
        if row is not None:
            return CellService(cell, row)
    return None


def find_service(cells: CellRegistry, host: str, binary: str) -> CellService | None:
    """The service of this binary on this host, looked for in the host's cell first."""
    for cell in _host_cell_first(cells, host):
        with cells.database(cell).read() as conn:
            row = services.find(conn, host, binary)
        if row is not None:
            return CellService(cell, row)
    return None


def all_nodes(cells: CellRegistry) -> list[CellNode]:
    """Every compute node of every cell with hosts, cell by cell, each with its service."""
    found = []
    for cell in cells.cells(include_cell0=False):
        # One snapshot: a host registering between two reads (its service and node are
        # committed together) would otherwise show a node without its service.
        with cells.database(cell).snapshot() as conn:
            by_id = {row["id"]: row for row in services.list_services(conn)}
            nodes = compute_nodes.list_nodes(conn)
        found += [CellNode(cell, node, by_id[node["service_id"]]) for node in nodes]
    return found


def nodes_of_host(cells: CellRegistry, host: str) -> list[RowMapping]:
    """The compute nodes of a host, from the cell it is mapped to (none when it is unmapped)."""
    cell = cells.cell_of_host(host)
    if cell is None:
        return []
    with cells.database(cell).read() as conn:
        return compute_nodes.list_nodes(conn, host=host)


def nodes_of_service(conn: Connection, service: Mapping[str, Any]) -> list[RowMapping]:
    """The compute nodes a service manages, read in its cell's database."""
    nodes = compute_nodes.list_nodes(conn, host=service["host"])
    return [node for node in nodes if node["service_id"] == service["id"]]


def _host_cell_first(cells: CellRegistry, host: str) -> list[Cell]:
    every = cells.cells(include_cell0=False)
    mapped = cells.cell_of_host(host)
    if mapped is None:
        return every
    return [mapped, *(cell for cell in every if cell.uuid != mapped.uuid)]


# Zones


def zones_of_hosts(aggregates: Iterable[Aggregate]) -> dict[str, str]:
    """Host -> its zone, for the hosts of zone-carrying aggregates (the others are in the
    default zone). A host whose aggregates name several zones shows them comma-separated."""
    zones: dict[str, set[str]] = {}
    for aggregate in aggregates:
        if aggregate.availability_zone is not None:
            for host in aggregate.hosts:
                zones.setdefault(host, set()).add(aggregate.availability_zone)
    return {host: ",".join(sorted(names)) for host, names in zones.items()}


def zone_of(service: Mapping[str, Any], zones: Mapping[str, str], default: str) -> str:
    """A compute service's zone is its host's; the other services are ``internal``."""
    if not is_compute(service):
        return INTERNAL_ZONE
    return zones.get(service["host"], default)


def reported_at(service: Mapping[str, Any]) -> dt.datetime | None:
    """When the service last reported (or was last changed, when it never reported)."""
    value: dt.datetime | None = (
        service["last_seen_up"] or service["updated_at"] or service["created_at"]
    )
    return value


def zone_conflict(
    aggregates: Iterable[Aggregate], host: str, zone: str | None, excluding: int
) -> str | None:
    """The other zone ``host`` is in already, when putting it in ``zone`` (through aggregate
    ``excluding``) would put it in two; None when it would not."""
    if zone is None:
        return None
    for aggregate in aggregates:
        if aggregate.id == excluding or host not in aggregate.hosts:
            continue
        other = aggregate.availability_zone
        if other is not None and other != zone:
            return other
    return None


# Mirroring into Placement


def mirror_aggregate(
    placement: PlacementClient | None,
    nodes: Iterable[RowMapping],
    aggregate_uuid: str,
    *,
    member: bool,
) -> None:
    """Make the aggregate one of the nodes' Placement aggregates (``member``) or not."""
    if placement is None:
        return
    for node in nodes:
        with _placement_errors(f"the aggregates of compute node {node['uuid']}"):
            placement.ensure_provider(node["uuid"], node["hypervisor_hostname"])
            if member:
                placement.update_aggregates(node["uuid"], {aggregate_uuid}, set())
            else:
                placement.update_aggregates(node["uuid"], set(), {aggregate_uuid})


def mirror_disabled(
    placement: PlacementClient | None, nodes: Iterable[RowMapping], *, disabled: bool
) -> None:
    """Put COMPUTE_STATUS_DISABLED on the nodes' providers, or take it off."""
    if placement is None:
        return
    for node in nodes:
        with _placement_errors(f"the traits of compute node {node['uuid']}"):
            placement.ensure_provider(node["uuid"], node["hypervisor_hostname"])
            if disabled:
                placement.update_traits(node["uuid"], {DISABLED_TRAIT}, set())
            else:
                placement.update_traits(node["uuid"], set(), {DISABLED_TRAIT})


def update_service(
    cells: CellRegistry,
    placement: PlacementClient | None,
    service: CellService,
    values: Mapping[str, Any],
) -> CellService:
    """Change the service in its cell, mirroring ``disabled`` into Placement before commit."""
    with cells.database(service.cell).write() as conn:
        services.update(conn, service.row["id"], values)
        if "disabled" in values:
            mirror_disabled(
                placement, nodes_of_service(conn, service.row), disabled=values["disabled"]
            )
        row = services.get(conn, service.row["id"])
    if row is None:
        raise exceptions.NotFound(f"Service {service.row['uuid']} could not be found.")
    return CellService(service.cell, row)


@contextmanager
def _placement_errors(what: str) -> Iterator[None]:
    """Placement's failures as the API's 503, so the caller's transaction rolls back."""
    try:
        yield
    except (PlacementError, ServiceUnavailable) as exc:
        raise exceptions.ServiceUnavailable(f"Placement could not update {what}: {exc}") from exc

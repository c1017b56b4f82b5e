"""Where the capacity view reads the fleet, in bulk: a few reads per page whatever the number of
hosts, never one per host.

- Placement: the worker's candidate index (``placement.candidates.live``), which holds every
  provider with its inventories, usage and traits, kept current from Placement's change
  sequence; reading it costs one small query when nothing changed. The view is served in the
  process that runs Placement (``berth up``), so it takes Placement's own data as the API would
  give it, without serialising thousands of providers.
- Compute: per cell, one read of its services and compute nodes and one count of servers per
  host; the aggregates from the API database.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Protocol

from sqlalchemy.engine import RowMapping

from berth.common.timeutils import utcnow
from berth.compute import hosts
from berth.compute.db import aggregates as aggregate_store
from berth.compute.db import instances
from berth.compute.db import services as service_store
from berth.compute.service import ComputeService
from berth.dashboard.decisions import Decision
from berth.dashboard.fleet import Amount, HostRow, NodeRecord, ProviderUsage, host_rows
from berth.placement.candidates.index import Provider, ProviderIndex


class ProviderSource(Protocol):
    """Every resource provider with its inventories and usage, as of now."""

    def __call__(self) -> list[ProviderUsage]: ...


def index_source(current: Callable[[], AbstractContextManager[ProviderIndex]]) -> ProviderSource:
    """The providers of a Placement worker's live index (``LiveIndex.current``)."""

    def read() -> list[ProviderUsage]:
        with current() as index:
            return [_usage(p) for p in index.providers()]

    return read


def _usage(provider: Provider) -> ProviderUsage:
    return ProviderUsage(
        uuid=provider.uuid,
        name=provider.name,
        parent_uuid=provider.parent_uuid,
        root_uuid=provider.root_uuid,
        amounts={
            rc: Amount(inventory.used, inventory.capacity)
            for rc, inventory in provider.inventories.items()
        },
        traits=provider.traits,
    )


class FleetReader:
    """The compute side's part of the view, and the join with Placement's."""

    def __init__(self, compute: ComputeService, providers: ProviderSource) -> None:
        self.compute = compute
        self.providers = providers

    def hosts(self) -> list[HostRow]:
        with self.compute.api_db.read() as conn:
            aggregates = aggregate_store.list_aggregates(conn)
        by_host: dict[str, list[str]] = {}
        for aggregate in aggregates:
            for host in aggregate.hosts:
                by_host.setdefault(host, []).append(aggregate.name)
        zones = hosts.zones_of_hosts(aggregates)
        default_zone = self.compute.settings.default_availability_zone
        nodes, servers = self._nodes_and_servers()
        return host_rows(
            self.providers(),
            nodes,
            by_host,
            {node.host: zones.get(node.host, default_zone) for node in nodes},
            servers,
        )

    def _nodes_and_servers(self) -> tuple[list[NodeRecord], dict[str, int]]:
        now = utcnow()
        down_time = self.compute.settings.service_down_time
        nodes = [
            NodeRecord(
                uuid=found.row["uuid"],
                host=found.row["host"],
                hypervisor_hostname=found.row["hypervisor_hostname"],
                cell=found.cell.name,
                enabled=not found.service["disabled"],
                up=service_store.is_up(found.service, now, down_time),
            )
            for found in hosts.all_nodes(self.compute.cells)
        ]
        servers: dict[str, int] = {}
        for cell in self.compute.cells.cells(include_cell0=False):
            with self.compute.cells.database(cell).read() as conn:
                for host, count in instances.count_by_host(conn).items():
                    servers[host] = servers.get(host, 0) + count
        return nodes, servers

    def servers_on(self, host: str) -> list[RowMapping] | None:
        """The live servers of a host, newest first; None for a host no cell has."""
        cell = self.compute.cells.cell_of_host(host)
        if cell is None:
            return None
        with self.compute.cells.database(cell).read() as conn:
            return instances.list_instances(conn, host=host)

    def decisions(self, limit: int) -> list[Decision]:
        """The ``limit`` newest servers of every cell (cell0's: those that found no host)."""
        found: list[Decision] = []
        for cell in self.compute.cells.cells(include_cell0=True):
            with self.compute.cells.database(cell).read() as conn:
                rows = instances.newest(conn, limit)
                faults = instances.latest_faults(conn, [row["uuid"] for row in rows])
            found += [Decision(row, cell.name, faults.get(row["uuid"])) for row in rows]
        found.sort(key=lambda d: (d.instance["created_at"], d.instance["id"]), reverse=True)
        return found[:limit]

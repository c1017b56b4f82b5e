"""What projects' servers used over a period (os-simple-tenant-usage): hours up, and VCPU,
memory and disk hours from each server's flavor.

A server counts from its launch (``launched_at``; one never launched counts nothing) to its
deletion (``terminated_at``), cut to the period. Its disk is its flavor's root and ephemeral
disk. Servers in every cell count, deleted ones included, until their cell forgets them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.compute.cells import CellRegistry
from berth.compute.db import instances

_HOUR = 3600.0


@dataclass(frozen=True)
class Period:
    start: dt.datetime
    stop: dt.datetime


@dataclass(frozen=True)
class ServerUsage:
    instance_id: str
    name: str
    tenant_id: str
    flavor: str
    vcpus: int
    memory_mb: int
    local_gb: int
    hours: float
    started_at: dt.datetime
    ended_at: dt.datetime | None
    # The server's vm_state; "terminated" once deleted.
    state: str
    # Seconds from its launch to its deletion, or to now.
    uptime: int


@dataclass
class TenantUsage:
    tenant_id: str
    servers: list[ServerUsage] = field(default_factory=list)

    @property
    def total_hours(self) -> float:
        return sum(server.hours for server in self.servers)

    @property
    def total_vcpus_usage(self) -> float:
        return sum(server.vcpus * server.hours for server in self.servers)

    @property
    def total_memory_mb_usage(self) -> float:
        return sum(server.memory_mb * server.hours for server in self.servers)

    @property
    def total_local_gb_usage(self) -> float:
        return sum(server.local_gb * server.hours for server in self.servers)


def servers_up(
    cells: CellRegistry, period: Period, project_id: str | None = None
) -> list[RowMapping]:
    """Every cell's instances that were up some time in the period (of one project when
    given), oldest first: the order pages follow."""
    found: list[RowMapping] = []
    for cell in cells.cells():
        with cells.database(cell).read() as conn:
            found += instances.up_between(conn, period.start, period.stop, project_id)
    return sorted(found, key=lambda row: (row["created_at"], row["uuid"]))


def server_usage(row: Mapping[str, Any], period: Period, now: dt.datetime) -> ServerUsage:
    """One instance's usage over the period (it was launched: ``servers_up`` found it)."""
    launched: dt.datetime = row["launched_at"]
    deleted = row["vm_state"] == "deleted"
    ended: dt.datetime | None = row["terminated_at"] if deleted else None
    start = max(launched, period.start)
    stop = min(period.stop, ended) if ended is not None else period.stop
    flavor = row["flavor"]
    return ServerUsage(
        instance_id=row["uuid"],
        name=row["display_name"],
        tenant_id=row["project_id"],
        flavor=flavor["name"],
        vcpus=int(flavor["vcpus"]),
        memory_mb=int(flavor["memory_mb"]),
        local_gb=int(flavor["root_gb"]) + int(flavor["ephemeral_gb"]),
        hours=max((stop - start).total_seconds(), 0.0) / _HOUR,
        started_at=launched,
        ended_at=ended,
        state="terminated" if deleted else row["vm_state"],
        uptime=int(((ended or now) - launched).total_seconds()),
    )


def by_tenant(
    rows: Iterable[Mapping[str, Any]], period: Period, now: dt.datetime
) -> dict[str, TenantUsage]:
    """Each project's usage, in the order its first server comes."""
    found: dict[str, TenantUsage] = {}
    for row in rows:
        usage = server_usage(row, period, now)
        found.setdefault(usage.tenant_id, TenantUsage(usage.tenant_id)).servers.append(usage)
    return found

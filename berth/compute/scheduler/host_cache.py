"""The compute nodes the scheduler read from a cell, kept between requests and read again only
where something changed.

A HostState is made of a compute node's row, its compute service's (enabled, forced down, last
heartbeat), the node's free VFs, its host's aggregates and recent failed builds, and the
servers a request names that are on the host. The node and service rows are the thousands; the
rest is read per request as before (it is small, and none of it grows with the servers running
but the named ones).

Every write of a compute node, and every write of a service but its heartbeat, bumps the row's
``change_count``. Per request the cache asks the cell for a signature of each table (the number
of rows, the sums of their ids and change counts, the largest id), one statement; while both
are as before, the rows read before still hold. When one moved, the ids and change counts are
read, and whole only the rows that are new or whose counts moved. (A row deleted and made again
under the same id, with as many writes in between, between two requests, would be missed: ids
are never reused on PostgreSQL and MariaDB, and on SQLite only the last row's.)

Heartbeats are followed by time instead: a service up at its last heartbeat stays up until that
heartbeat is ``down_time`` old, and only then, or while it is down by time, is its row read
again (a heartbeat may have come since). The signature is read before the rows, so the rows
kept are never older than the signature kept with them.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from berth.compute.db import services
from berth.compute.db.cell_schema import compute_nodes as cn
from berth.compute.db.cell_schema import services as svc
from berth.compute.scheduler.host_state import Aggregate, HostState

__all__ = ["CellHosts", "Inputs"]

# Rows read whole by id in one statement at most (below every backend's parameter limit).
_IDS_PER_STATEMENT = 500

# A compute node and its compute service (None's when it has none), as a HostState needs them.
_NODES = (
    sa.select(
        cn.c.id, cn.c.uuid, cn.c.host, cn.c.hypervisor_hostname, cn.c.hypervisor_type,
        cn.c.vcpus, cn.c.vcpus_used, cn.c.cpu_allocation_ratio,
        cn.c.memory_mb, cn.c.memory_mb_used, cn.c.ram_allocation_ratio,
        cn.c.local_gb, cn.c.local_gb_used, cn.c.disk_allocation_ratio,
        svc.c.disabled, svc.c.forced_down, svc.c.last_seen_up,
        cn.c.change_count, svc.c.change_count.label("service_change_count"),
    )
    .select_from(cn)
    .outerjoin(svc, sa.and_(svc.c.id == cn.c.service_id, svc.c.binary == "nova-compute"))
    .order_by(cn.c.id)
)  # fmt: skip

# What tells a row changed: the node's and its service's change counts.
_COUNTS = (
    sa.select(cn.c.id, cn.c.change_count, svc.c.change_count)
    .select_from(cn)
    .outerjoin(svc, sa.and_(svc.c.id == cn.c.service_id, svc.c.binary == "nova-compute"))
)


def _signature_of(table: sa.Table) -> sa.Select[Any]:
    zero = sa.literal(0)
    return sa.select(
        sa.func.count(),
        sa.func.coalesce(sa.func.sum(table.c.change_count), zero),
        sa.func.coalesce(sa.func.sum(table.c.id), zero),
        sa.func.coalesce(sa.func.max(table.c.id), zero),
    )


_SIGNATURE = sa.union_all(_signature_of(cn), _signature_of(svc))


@dataclass(frozen=True)
class Inputs:
    """What else the HostStates are made of, as read for one request."""

    # Host name -> its aggregates.
    aggregates: Mapping[str, tuple[Aggregate, ...]]
    # Host name -> its recent failed builds.
    failures: Mapping[str, int]
    # Node id -> PF device name -> free VFs.
    free_vfs: Mapping[int, Mapping[str, int]]
    # Host name -> the servers the request names that are on it.
    servers: Mapping[str, frozenset[str]]


def _counts(row: Row[Any]) -> tuple[int, int | None]:
    return row.change_count, row.service_change_count


class CellHosts:
    """One cell's compute nodes as last read, and the HostStates made of them."""

    def __init__(self, cell_uuid: str, default_zone: str, down_time: float) -> None:
        self.cell_uuid = cell_uuid
        self.default_zone = default_zone
        self.down_time = down_time
        self._lock = threading.Lock()
        self._signature: list[tuple[Any, ...]] | None = None
        # Node id -> its row (``_NODES``), in id order.
        self._rows: dict[int, Row[Any]] = {}
        self._inputs: Inputs | None = None
        # Node id -> whether its service was up when last worked out.
        self._up: dict[int, bool] = {}
        # The earliest time a service up now stops being up, unless it reports meanwhile.
        self._next_expiry: dt.datetime | None = None
        # Node id -> its HostState, in id order.
        self._states: dict[int, HostState] = {}

    def states(
        self, conn: Connection, now: dt.datetime, node_uuids: Collection[str], inputs: Inputs
    ) -> list[HostState]:
        """The HostStates of the cell's nodes among ``node_uuids``, in id order, the rest of
        each made of ``inputs``."""
        with self._lock:
            changed = self._refresh(conn, now)
            if inputs != self._inputs:
                self._inputs, changed = inputs, set(self._rows)
            for node_id in changed:
                self._states[node_id] = self._state(self._rows[node_id], self._up[node_id])
            if changed:
                self._states = {i: self._states[i] for i in self._rows}
            return [s for s in self._states.values() if s.node_uuid in node_uuids]

    def _refresh(self, conn: Connection, now: dt.datetime) -> set[int]:
        """Bring the rows up to date: those that changed, and those whose service may have
        reported since it was last seen down (or is about to be). The ids of the nodes read
        again."""
        signature = [tuple(r) for r in conn.execute(_SIGNATURE)]
        reread: set[int] = set()
        if signature != self._signature:
            counts = {r[0]: (r[1], r[2]) for r in conn.execute(_COUNTS)}
            for node_id in self._rows.keys() - counts.keys():
                self._forget(node_id)
            reread = {
                node_id
                for node_id, seen in counts.items()
                if node_id not in self._rows or _counts(self._rows[node_id]) != seen
            }
            self._signature = signature
        if self._next_expiry is not None and now >= self._next_expiry:
            reread |= {i for i, up in self._up.items() if up}
        reread |= {i for i, up in self._up.items() if not up and not self._rows[i].forced_down}
        if not reread:
            return reread
        read = self._read(conn, reread)
        # Asked for and not found: deleted since the counts were read.
        for node_id in reread - read:
            self._forget(node_id)
        reread = read
        for node_id in reread:
            self._up[node_id] = services.is_up(self._rows[node_id]._mapping, now, self.down_time)
        self._next_expiry = min(
            (
                row.last_seen_up + dt.timedelta(seconds=self.down_time)
                for node_id, row in self._rows.items()
                if self._up[node_id]
            ),
            default=None,
        )
        return reread

    def _forget(self, node_id: int) -> None:
        self._rows.pop(node_id, None)
        self._up.pop(node_id, None)
        self._states.pop(node_id, None)

    def _read(self, conn: Connection, node_ids: set[int]) -> set[int]:
        """Read these nodes' rows whole (every node's when they are most of them): the ids of
        the rows read."""
        if len(node_ids) > len(self._rows) // 2:
            rows = list(conn.execute(_NODES))
        else:
            ordered = sorted(node_ids)
            rows = []
            for start in range(0, len(ordered), _IDS_PER_STATEMENT):
                chosen = cn.c.id.in_(ordered[start : start + _IDS_PER_STATEMENT])
                rows += conn.execute(_NODES.where(chosen))
        new = any(row.id not in self._rows for row in rows)
        self._rows.update((row.id, row) for row in rows)
        if new:
            self._rows = dict(sorted(self._rows.items()))
        return {row.id for row in rows}

    def _state(self, node: Row[Any], up: bool) -> HostState:
        inputs = self._inputs
        assert inputs is not None
        aggregates = inputs.aggregates.get(node.host, ())
        zones = {a.metadata.get("availability_zone") for a in aggregates} - {None}
        return HostState(
            host=node.host,
            node=node.hypervisor_hostname,
            node_uuid=node.uuid,
            cell_uuid=self.cell_uuid,
            availability_zone=next(iter(sorted(zones)), self.default_zone),  # type: ignore[arg-type]
            disabled=bool(node.disabled),
            up=up,
            free_vcpus=int(node.vcpus * node.cpu_allocation_ratio) - node.vcpus_used,
            free_ram_mb=int(node.memory_mb * node.ram_allocation_ratio) - node.memory_mb_used,
            free_disk_gb=int(node.local_gb * node.disk_allocation_ratio) - node.local_gb_used,
            aggregates=aggregates,
            failed_builds=inputs.failures.get(node.host, 0),
            instances=inputs.servers.get(node.host, frozenset()),
            hypervisor_type=node.hypervisor_type or "",
            free_vfs=dict(sorted(inputs.free_vfs.get(node.id, {}).items())),
        )

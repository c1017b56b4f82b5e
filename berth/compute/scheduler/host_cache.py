"""The compute nodes the scheduler read from a cell, kept between requests and read again only
where something changed.

A HostState is made of a compute node's row, its compute service's (enabled, forced down, last
heartbeat), the node's free VFs, its host's recent failed builds, its host's aggregates (from
the API database) and the servers a request names that are on the host. A pass rebuilds only
the HostStates whose parts changed; the others stay the very objects they were, which is what
lets the ranking keep each node's outcome between passes (``ranking.Outcomes``).

The writers of the cell's rows log what they changed in the cell's change sequence
(``berth.compute.db.host_changes``): a node's row or PCI devices, an operator's change to a
service, a fault against a host. Per pass the cache asks for what was logged after the number
it has seen, one statement, and reads again the nodes and VFs named and, when faults were
logged, the recent faults (a few rows). The first pass, or one after a write that made rows
whose ids it did not log (a fleet's nodes in one statement), reads every node's and service's
change count and reads whole the rows whose counts moved. The number is read before the rows,
so the rows kept are never older than the number kept with them.

Heartbeats are followed by time instead: a service up at its last heartbeat stays up until that
heartbeat is ``down_time`` old, and only then, or while it is down by time, is its row read
again (a heartbeat may have come since). Failed builds count while younger than
``FAILURE_MEMORY``: the faults kept are dropped as they age out.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import Counter, deque
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Row

from berth.common.db import Database
from berth.compute.db import host_changes, instances, pci_devices, services
from berth.compute.db.cell_schema import compute_nodes as cn
from berth.compute.db.cell_schema import services as svc
from berth.compute.scheduler.host_state import Aggregate, HostState

__all__ = ["FAILURE_MEMORY", "CellHosts", "Inputs"]

# How long a failed build on a host counts against it.
FAILURE_MEMORY = dt.timedelta(minutes=30)
# Rows read whole by id in one statement at most (below every backend's parameter limit).
_IDS_PER_STATEMENT = 500

# A compute node and its compute service (None's when it has none), as a HostState needs them.
_NODES = (
    sa.select(
        cn.c.id, cn.c.uuid, cn.c.host, cn.c.hypervisor_hostname, cn.c.hypervisor_type,
        cn.c.vcpus, cn.c.vcpus_used, cn.c.cpu_allocation_ratio,
        cn.c.memory_mb, cn.c.memory_mb_used, cn.c.ram_allocation_ratio,
        cn.c.local_gb, cn.c.local_gb_used, cn.c.disk_allocation_ratio,
        cn.c.service_id, svc.c.disabled, svc.c.forced_down, svc.c.last_seen_up,
        cn.c.change_count, svc.c.change_count.label("service_change_count"),
    )
    .select_from(cn)
    .outerjoin(svc, sa.and_(svc.c.id == cn.c.service_id, svc.c.binary == "nova-compute"))
    .order_by(cn.c.id)
)  # fmt: skip

# What tells a row changed when every row is compared: the node's and its service's counts.
_COUNTS = (
    sa.select(cn.c.id, cn.c.change_count, svc.c.change_count)
    .select_from(cn)
    .outerjoin(svc, sa.and_(svc.c.id == cn.c.service_id, svc.c.binary == "nova-compute"))
)

K = TypeVar("K")


@dataclass(frozen=True)
class Inputs:
    """What else the HostStates are made of, as the service read it for one request."""

    # Host name -> its aggregates (the same mapping while the aggregates are unchanged).
    aggregates: Mapping[str, tuple[Aggregate, ...]]
    # Host name -> the servers the request names that are on it.
    servers: Mapping[str, frozenset[str]]


def _counts(row: Row[Any]) -> tuple[int, int | None]:
    return row.change_count, row.service_change_count


def _moved(old: Mapping[K, object], new: Mapping[K, object]) -> set[K]:
    """The keys whose value differs between the two mappings."""
    if old is new:
        return set()
    return {key for key in old.keys() | new.keys() if old.get(key) != new.get(key)}


class CellHosts:
    """One cell's compute nodes as last read, and the HostStates made of them."""

    def __init__(self, cell_uuid: str, default_zone: str, down_time: float) -> None:
        self.cell_uuid = cell_uuid
        self.default_zone = default_zone
        self.down_time = down_time
        self._lock = threading.Lock()
        # The number of the cell's change sequence the rows below are as new as.
        self._seen: int | None = None
        # Node id -> its row (``_NODES``), in id order.
        self._rows: dict[int, Row[Any]] = {}
        # Node id -> whether its service was up when last worked out.
        self._up: dict[int, bool] = {}
        # The earliest time a service up now stops being up, unless it reports meanwhile.
        self._next_expiry: dt.datetime | None = None
        # Node id -> PF device name -> free VFs (nodes with PFs only).
        self._free_vfs: dict[int, dict[str, int]] = {}
        # The faults against hosts since ``_faults_since``, oldest first, and their count by host.
        self._faults: deque[tuple[dt.datetime, str]] = deque()
        self._faults_since: dt.datetime | None = None
        self._failures: dict[str, int] = {}
        self._inputs = Inputs(aggregates={}, servers={})
        # Node id -> its HostState, in id order.
        self._states: dict[int, HostState] = {}

    def states(
        self, db: Database, now: dt.datetime, node_uuids: Collection[str], inputs: Inputs
    ) -> list[HostState]:
        """The HostStates of the cell's nodes among ``node_uuids``, in id order, the rest of
        each made of ``inputs``."""
        with self._lock:
            # What changed, in a statement of its own (no transaction to begin and end: the
            # usual pass reads nothing else). Read before the rows, never after.
            with db.one_statement() as conn:
                if self._seen is None:
                    changes = host_changes.Changes(host_changes.current(conn), everything=True)
                else:
                    changes = host_changes.since(conn, self._seen)
            self._seen = changes.upto
            since = now - FAILURE_MEMORY
            # Faults read again when logged, and when the clock went back (passes racing for
            # the lock): faults the list dropped may count again.
            faults = (
                changes.faults
                or changes.everything
                or self._faults_since is None
                or since < self._faults_since
            )
            due = self._due(now)
            changed: set[int] = set()
            if changes.everything or changes.nodes or changes.services or due or faults:
                with db.read() as conn:
                    changed = self._refresh(conn, now, changes, due)
                    if faults:
                        self._faults = deque(instances.failures_since(conn, since))
            hosts = self._age_failures(since)
            hosts |= _moved(self._inputs.aggregates, inputs.aggregates)
            hosts |= _moved(self._inputs.servers, inputs.servers)
            self._inputs = inputs
            if hosts:
                changed |= {i for i, row in self._rows.items() if row.host in hosts}
            for node_id in changed:
                self._states[node_id] = self._state(self._rows[node_id], self._up[node_id])
            if changed:
                self._states = {i: self._states[i] for i in self._rows}
            return [s for s in self._states.values() if s.node_uuid in node_uuids]

    def _due(self, now: dt.datetime) -> set[int]:
        """The nodes whose service may have reported since it was last seen down, or whose
        heartbeat may be too old now."""
        due = {i for i, up in self._up.items() if not up and not self._rows[i].forced_down}
        if self._next_expiry is not None and now >= self._next_expiry:
            due |= {i for i, up in self._up.items() if up}
        return due

    def _refresh(
        self, conn: Connection, now: dt.datetime, changes: host_changes.Changes, due: set[int]
    ) -> set[int]:
        """Bring the rows and free VFs up to date: those ``changes`` names, and the ``due``
        ones. The ids of the nodes whose state may differ now."""
        if changes.everything:
            reread = self._compare_counts(conn)
            vfs = pci_devices.free_vfs_by_node(conn)
            changed = _moved(self._free_vfs, vfs)
            self._free_vfs = vfs
        else:
            reread = set(changes.nodes)
            if changes.services:
                reread |= {i for i, r in self._rows.items() if r.service_id in changes.services}
            changed = self._read_vfs(conn, changes.nodes)
        reread |= due
        if reread:
            read = self._read(conn, reread)
            # Asked for and not found: deleted since they were logged.
            for node_id in reread - read:
                self._forget(node_id)
            for node_id in read:
                self._up[node_id] = services.is_up(
                    self._rows[node_id]._mapping, now, self.down_time
                )
            self._next_expiry = min(
                (
                    row.last_seen_up + dt.timedelta(seconds=self.down_time)
                    for node_id, row in self._rows.items()
                    if self._up[node_id]
                ),
                default=None,
            )
            changed |= read
        changed &= self._rows.keys()
        return changed

    def _compare_counts(self, conn: Connection) -> set[int]:
        """Every node's and its service's change counts against the rows kept: the nodes new or
        changed (the ones gone are forgotten)."""
        counts = {r[0]: (r[1], r[2]) for r in conn.execute(_COUNTS)}
        for node_id in self._rows.keys() - counts.keys():
            self._forget(node_id)
        return {
            node_id
            for node_id, seen in counts.items()
            if node_id not in self._rows or _counts(self._rows[node_id]) != seen
        }

    def _read_vfs(self, conn: Connection, node_ids: Iterable[int]) -> set[int]:
        """Read again these nodes' free VFs: those whose free VFs changed."""
        ids = sorted(node_ids)
        if not ids:
            return set()
        vfs = {}
        for start in range(0, len(ids), _IDS_PER_STATEMENT):
            vfs |= pci_devices.free_vfs_by_node(conn, ids[start : start + _IDS_PER_STATEMENT])
        changed = set()
        for node_id in ids:
            now_free = vfs.get(node_id)
            if now_free != self._free_vfs.get(node_id):
                changed.add(node_id)
                if now_free is None:
                    del self._free_vfs[node_id]
                else:
                    self._free_vfs[node_id] = now_free
        return changed

    def _age_failures(self, since: dt.datetime) -> set[str]:
        """Drop the failures older than ``since``: the hosts whose count changed."""
        while self._faults and self._faults[0][0] < since:
            self._faults.popleft()
        self._faults_since = since
        failures = dict(Counter(host for _, host in self._faults))
        changed = _moved(self._failures, failures)
        self._failures = failures
        return changed

    def _forget(self, node_id: int) -> None:
        self._rows.pop(node_id, None)
        self._up.pop(node_id, None)
        self._states.pop(node_id, None)
        self._free_vfs.pop(node_id, None)

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
            failed_builds=self._failures.get(node.host, 0),
            instances=inputs.servers.get(node.host, frozenset()),
            hypervisor_type=node.hypervisor_type or "",
            free_vfs=dict(sorted(self._free_vfs.get(node.id, {}).items())),
        )

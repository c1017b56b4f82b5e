"""The cell's change sequence of what the scheduler's cache of hosts holds
(``berth.compute.scheduler.host_cache``): compute nodes, their PCI devices, their services
(but heartbeats, which the cache follows by time) and the faults recorded against hosts.

The writers of those rows say what they changed (``touch_nodes``, ``touch_services``,
``touch_faults``, ``touch_everything``). ``HostChanges``, the cell database's write hook,
advances the sequence and logs the touches as the transaction's last statements, so the log
commits with the change or not at all, and the sequence row is locked only from there to the
commit (a writer holding it waits for nothing else: no deadlock). A transaction of a database
opened without the hook (a tool, a test) publishes at each touch instead. A scheduling pass asks
``since`` for what changed after the number it has seen: one short statement when nothing did.
Placement's change log (``berth.placement.store.changes``) works the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy.engine import Connection

from berth.common.change_log import ChangeSequence
from berth.compute.db.cell_schema import host_change_sequence as seq
from berth.compute.db.cell_schema import host_changes as log

__all__ = [
    "Changes",
    "HostChanges",
    "current",
    "since",
    "touch_everything",
    "touch_faults",
    "touch_nodes",
    "touch_services",
]

_PENDING = "berth.compute.host_changes"


@dataclass
class _Pending:
    nodes: set[int] = field(default_factory=set)
    services: set[int] = field(default_factory=set)
    faults: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.nodes or self.services) or self.faults or self.everything


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed after a number, up to ``upto``."""

    upto: int
    nodes: frozenset[int] = frozenset()
    services: frozenset[int] = frozenset()
    faults: bool = False
    everything: bool = False


class HostChanges:
    """The write hook that publishes each transaction's touches (see ``Database.write``)."""

    def begin(self, conn: Connection) -> None:
        # ``info`` outlives the transaction (it is the pooled connection's): the pending
        # touches name the connection they are for, so that those of a transaction rolled
        # back are never taken for another's.
        conn.info[_PENDING] = conn, _Pending()

    def before_commit(self, conn: Connection) -> None:
        owner, pending = conn.info.pop(_PENDING, (None, None))
        if owner is conn and pending:
            _publish(conn, pending)


def _touch(conn: Connection, touched: _Pending) -> None:
    owner, pending = conn.info.get(_PENDING, (None, None))
    if owner is not conn or pending is None:
        _publish(conn, touched)
        return
    pending.nodes |= touched.nodes
    pending.services |= touched.services
    pending.faults |= touched.faults
    pending.everything |= touched.everything


def touch_nodes(conn: Connection, node_ids: Iterable[int]) -> None:
    """These compute nodes' rows or PCI devices changed (or are gone)."""
    ids = set(node_ids)
    if ids:
        _touch(conn, _Pending(nodes=ids))


def touch_services(conn: Connection, service_ids: Iterable[int]) -> None:
    """These services changed by an operator (or are gone, with their nodes)."""
    ids = set(service_ids)
    if ids:
        _touch(conn, _Pending(services=ids))


def touch_faults(conn: Connection) -> None:
    """Faults against a host were recorded or removed."""
    _touch(conn, _Pending(faults=True))


def touch_everything(conn: Connection) -> None:
    """Rows were made whose ids the writer does not know (a fleet's nodes in one statement)."""
    _touch(conn, _Pending(everything=True))


# Built once: every publishing write and every scheduling pass runs them.
SEQUENCE = ChangeSequence(seq, log, "key")


def _publish(conn: Connection, pending: _Pending) -> None:
    logged: list[tuple[str, int | None]] = [("node", n) for n in sorted(pending.nodes)]
    logged += [("service", s) for s in sorted(pending.services)]
    if pending.faults:
        logged.append(("faults", None))
    if pending.everything:
        logged.append(("everything", None))
    SEQUENCE.log(conn, SEQUENCE.advance(conn), logged)


def current(conn: Connection) -> int:
    return SEQUENCE.current(conn)


def since(conn: Connection, seen: int) -> Changes:
    """What changed after number ``seen``, up to the newest: one statement. A reader too far
    behind reads everything."""
    logged = SEQUENCE.since(conn, seen)
    if logged.behind:
        return Changes(logged.upto, everything=True)
    scopes = {scope for scope, _ in logged.rows}
    return Changes(
        logged.upto,
        nodes=frozenset(key for scope, key in logged.rows if scope == "node" and key is not None),
        services=frozenset(
            key for scope, key in logged.rows if scope == "service" and key is not None
        ),
        faults="faults" in scopes,
        everything="everything" in scopes,
    )

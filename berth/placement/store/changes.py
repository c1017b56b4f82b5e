"""The change sequence: what each write changed, for the workers' candidate indexes.

Store functions that change something the index holds say so with ``touch`` (a provider's row,
inventory, traits or aggregates), ``touch_usage`` (only its usage and generation: a claim) or
``touch_names`` (resource classes or traits themselves).
``ChangeLog``, a write hook of the placement database, then advances the sequence and logs the
touched providers as the transaction's last statements, so the log commits with the change or not
at all. Readers ask ``current`` for the newest number and ``since`` for what changed after theirs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.common.change_log import ChangeSequence
from berth.placement.store.schema import change_sequence, changes

_PENDING = "berth.placement.changes"


@dataclass
class _Pending:
    providers: set[int] = field(default_factory=set)
    usage: set[int] = field(default_factory=set)
    names: bool = False
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.providers or self.usage) or self.names or self.everything


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed between two sequence numbers. ``usage`` holds the providers of which only
    usage and generation changed (claims), none of those in ``providers``."""

    upto: int
    providers: frozenset[int] = frozenset()
    usage: frozenset[int] = frozenset()
    names: bool = False
    everything: bool = False


class ChangeLog:
    """The write hook that publishes each transaction's touches (see ``Database.write``)."""

    def begin(self, conn: Connection) -> None:
        conn.info[_PENDING] = _Pending()

    def before_commit(self, conn: Connection) -> None:
        pending = conn.info.pop(_PENDING, None)
        if pending:
            publish(conn, pending)


def _pending(conn: Connection) -> _Pending:
    try:
        return conn.info[_PENDING]  # type: ignore[no-any-return]
    except KeyError:
        raise RuntimeError(
            "placement writes must run in a write transaction of the placement database"
        ) from None


def touch(conn: Connection, provider_ids: Iterable[int]) -> None:
    _pending(conn).providers.update(provider_ids)


def touch_usage(conn: Connection, provider_ids: Iterable[int]) -> None:
    """The providers' usage (and so their generation) changed, nothing else about them."""
    _pending(conn).usage.update(provider_ids)


def touch_names(conn: Connection) -> None:
    _pending(conn).names = True


def publish_everything(conn: Connection) -> None:
    """Tell every index to reload, from a transaction that wrote around the store (bulk loads)."""
    publish(conn, _Pending(everything=True))


# The sequence's statements, built once: every write and nearly every query runs them.
SEQUENCE = ChangeSequence(change_sequence, changes, "provider_id")


def _publish_statement_postgresql() -> sa.Insert:
    """Advance the sequence and log every touch in one statement: the sequence's ``UPDATE`` in a
    ``WITH``, the log rows zipped from two arrays. The sequence row stays locked until commit,
    so one round trip fewer is one less for every other writer to wait for."""
    advanced = SEQUENCE.advance_returning.cte("advanced")
    rows = sa.select(
        advanced.c.value,
        sa.func.unnest(sa.bindparam("scopes", type_=postgresql.ARRAY(sa.String))),
        sa.func.unnest(sa.bindparam("providers", type_=postgresql.ARRAY(sa.Integer))),
    )
    return (
        changes.insert().from_select(["seq", "scope", "provider_id"], rows).returning(changes.c.seq)
    )


_PUBLISH_POSTGRESQL = _publish_statement_postgresql()


def publish(conn: Connection, pending: _Pending) -> None:
    logged = [("provider", p) for p in pending.providers]
    logged += [("usage", p) for p in pending.usage - pending.providers]
    if pending.names:
        logged.append(("names", None))
    if pending.everything:
        logged.append(("everything", None))
    if conn.dialect.name == "postgresql":
        scopes, providers = zip(*logged, strict=True)
        value = direct.execute(
            conn, _PUBLISH_POSTGRESQL, {"scopes": list(scopes), "providers": list(providers)}
        ).scalar()
        SEQUENCE.prune(conn, value)
    else:
        SEQUENCE.log(conn, SEQUENCE.advance(conn), logged)


def current(conn: Connection) -> int:
    return SEQUENCE.current(conn)


def since(conn: Connection, seen: int) -> Changes:
    """What changed after number ``seen``, up to the newest number: one round trip.

    The row lock on the sequence makes numbers commit in order, so every change numbered up to
    the newest is visible once that number is. A reader too far behind reloads everything.
    """
    # On the driver's cursor: every request of the candidates asks (SQLAlchemy's execution cost
    # five times the database's work on this statement).
    logged = SEQUENCE.since(conn, seen)
    if logged.behind:
        return Changes(logged.upto, everything=True)
    scopes = {scope for scope, _ in logged.rows}
    whole = frozenset(p for scope, p in logged.rows if scope == "provider" and p is not None)
    usage = frozenset(p for scope, p in logged.rows if scope == "usage" and p is not None)
    return Changes(
        logged.upto,
        providers=whole,
        usage=usage - whole,
        names="names" in scopes,
        everything="everything" in scopes,
    )

"""Rows that serialise writers: one row per key (a project, a user), taken with an ``UPDATE``
inside the transaction whose decision must not race (count the project's servers, then add
some), and held until it commits.

PostgreSQL and MariaDB lock the row they update until the transaction ends; a writer that
finds the row taken waits, then reads what the first one committed. A SQLite write transaction
already holds the whole database from its first statement (``BEGIN IMMEDIATE``), so there
:func:`hold` runs nothing.

A key's row is made the first time it is needed. Made inside the deciding transaction, first
writers can race to insert it; on MariaDB each loser keeps a shared lock on the winner's row
after its failed insert (a savepoint does not give it back), and two such losers can then
deadlock on their ``UPDATE``. So :func:`ensure` makes the row in a transaction of its own first,
and :func:`hold` (which can also make it, so that it is correct alone) finds it there. Rows are
never deleted, so a row this process has seen or made is there for good: :func:`ensure` asks the
database about a key only the first time (each create asked before, a transaction of its own).

A lock table has the key's columns, unique together, and an integer ``generation``, which
counts the decisions taken under the row on a server (nothing reads it but people debugging).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common.db import Database, holds_database

__all__ = ["ensure", "hold"]


# Per database, the (table, key) of the rows known to be there.
_KNOWN: weakref.WeakKeyDictionary[Database, set[tuple[str, tuple[tuple[str, str], ...]]]] = (
    weakref.WeakKeyDictionary()
)
_KNOWN_GUARD = threading.Lock()
# Per table and key columns, the ``UPDATE`` that takes a row, built once: every create of a
# counted resource runs one, and building it (and its cache key) costs SQLAlchemy several
# times what the database takes to run it.
_BUMPS: dict[tuple[sa.Table, tuple[str, ...]], sa.Update] = {}


def ensure(db: Database, table: sa.Table, key: Mapping[str, str]) -> None:
    """Make the key's row unless it exists (nothing when this process knows it does, the usual
    case; else a read, and a write when it does not)."""
    with _KNOWN_GUARD:
        known = _KNOWN.setdefault(db, set())
    mark = (table.name, tuple(sorted(key.items())))
    if mark in known:
        return
    with db.read() as conn:
        found = conn.execute(sa.select(sa.literal(1)).where(*_matching(table, key))).first()
    if not found:
        with db.write() as conn:
            _insert(conn, table, key)
    known.add(mark)


def hold(conn: Connection, table: sa.Table, key: Mapping[str, str]) -> None:
    """Lock the key's row until ``conn``'s transaction ends (waiting for another holder).
    Nothing in a transaction that holds the whole database already (SQLite's writes): the row
    would serialise nothing more, and its ``UPDATE`` would add a page to the commit."""
    if holds_database(conn):
        return
    if _bump(conn, table, key):
        return
    if _insert(conn, table, key):
        return
    # Another writer inserted it between our two statements: now it exists, wait for it.
    if not _bump(conn, table, key):
        raise RuntimeError(f"the lock row {dict(key)} of {table.name} vanished")


def _bump(conn: Connection, table: sa.Table, key: Mapping[str, str]) -> bool:
    names = tuple(key)
    statement = _BUMPS.get((table, names))
    if statement is None:
        statement = _BUMPS.setdefault((table, names), _bump_statement(table, names))
    params = {f"key_{name}": value for name, value in key.items()}
    return conn.execute(statement, params).rowcount > 0


def _bump_statement(table: sa.Table, names: tuple[str, ...]) -> sa.Update:
    # The parameters are not named as columns: an UPDATE's SET reserves those names.
    where = [table.c[name] == sa.bindparam(f"key_{name}") for name in names]
    return table.update().where(*where).values(generation=table.c.generation + 1)


def _insert(conn: Connection, table: sa.Table, key: Mapping[str, str]) -> bool:
    """Insert the row, in a savepoint so a duplicate leaves the transaction usable; False when
    another writer made it first."""
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values(**key, generation=1))
    except IntegrityError:
        return False
    return True


def _matching(table: sa.Table, key: Mapping[str, str]) -> list[sa.ColumnElement[bool]]:
    return [table.c[name] == value for name, value in key.items()]

"""Lock rows (berth.common.lock_rows): made ahead of the transaction that holds them, and asked
about only until this process has seen them, since they are never deleted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event

from berth.common import lock_rows
from berth.common.db import Database

_METADATA = sa.MetaData()
LOCKS = sa.Table(
    "locks",
    _METADATA,
    sa.Column("project_id", sa.String(64), primary_key=True),
    sa.Column("generation", sa.Integer, nullable=False),
)


@contextmanager
def _statements(db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(*args: object) -> None:
        seen.append(str(args[2]))

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def _database(path: Path) -> Database:
    db = Database(f"sqlite:///{path}")
    _METADATA.create_all(db.engine)
    return db


def _generations(db: Database) -> dict[str, int]:
    with db.read() as conn:
        return {str(p): int(g) for p, g in conn.execute(sa.select(LOCKS))}


def test_a_row_is_asked_about_until_it_is_known_and_held_after(tmp_path: Path) -> None:
    db = _database(tmp_path / "locks.sqlite")
    with _statements(db) as first:
        lock_rows.ensure(db, LOCKS, {"project_id": "alice"})
    assert any(s.startswith("INSERT INTO locks") for s in first), first
    with _statements(db) as again:
        lock_rows.ensure(db, LOCKS, {"project_id": "alice"})
    assert again == []
    with _statements(db) as other:
        lock_rows.ensure(db, LOCKS, {"project_id": "bob"})
    assert any(s.startswith("INSERT INTO locks") for s in other), other
    # A transaction that does not hold the whole database takes the row.
    with db.engine.begin() as conn:
        lock_rows.hold(conn, LOCKS, {"project_id": "alice"})
    assert _generations(db) == {"alice": 2, "bob": 1}
    db.dispose()


def test_a_sqlite_write_holds_no_row(tmp_path: Path) -> None:
    """A SQLite write transaction holds the whole database from its start: the row's UPDATE
    would serialise nothing more."""
    db = _database(tmp_path / "locks.sqlite")
    lock_rows.ensure(db, LOCKS, {"project_id": "alice"})
    with _statements(db) as held, db.write() as conn:
        lock_rows.hold(conn, LOCKS, {"project_id": "alice"})
    assert held == []
    assert _generations(db) == {"alice": 1}
    db.dispose()


def test_another_database_object_asks_again_and_finds_the_row(tmp_path: Path) -> None:
    """What one Database knows is its own: another (another process, a new database on the
    same URL) asks, and makes nothing when the row is there."""
    first = _database(tmp_path / "locks.sqlite")
    lock_rows.ensure(first, LOCKS, {"project_id": "alice"})
    second = _database(tmp_path / "locks.sqlite")
    with _statements(second) as asked:
        lock_rows.ensure(second, LOCKS, {"project_id": "alice"})
    assert len(asked) == 1 and asked[0].startswith("SELECT"), asked
    assert _generations(second) == {"alice": 1}
    first.dispose()
    second.dispose()

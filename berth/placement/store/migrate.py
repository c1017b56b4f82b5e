"""Bring a placement database to the newest schema and make sure the standard names exist."""

from __future__ import annotations

from pathlib import Path

import os_resource_classes
import os_traits
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.common.migrations import Migrations
from berth.common.timeutils import utcnow
from berth.placement.store import changes
from berth.placement.store.schema import resource_classes, traits

MIGRATIONS = Migrations(Path(__file__).parent / "migrations")


def head_revision() -> str:
    return MIGRATIONS.head()


def current_revision(db: Database) -> str | None:
    return MIGRATIONS.current(db)


def sync(db: Database) -> bool:
    """Upgrade the schema to head and add missing standard resource classes and traits.

    Returns True when the schema changed. Safe to run at every start and from several processes:
    the name tables are filled with inserts that skip existing rows.
    """
    changed = MIGRATIONS.upgrade(db)
    with db.write() as conn:
        _ensure_names(conn, resource_classes, os_resource_classes.STANDARDS)
        _ensure_names(conn, traits, os_traits.get_traits())
    return changed


def _ensure_names(conn: Connection, table: sa.Table, names: list[str]) -> None:
    existing = set(conn.scalars(sa.select(table.c.name)))
    missing = [n for n in names if n not in existing]
    if missing:
        now = utcnow()
        conn.execute(table.insert(), [{"name": n, "created_at": now} for n in missing])
        changes.touch_names(conn)

"""Bring a network database to the newest schema."""

from __future__ import annotations

from pathlib import Path

from berth.common.db import Database
from berth.common.migrations import Migrations

# Its own version table, so the network and placement schemas may share one database.
MIGRATIONS = Migrations(Path(__file__).parent / "migrations", "network_alembic_version")


def sync(db: Database) -> bool:
    """Upgrade the schema to head; True when it changed. Safe to run at every start."""
    return MIGRATIONS.upgrade(db)

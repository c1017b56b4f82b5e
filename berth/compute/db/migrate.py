"""Bring a compute API database or a cell database to the newest schema."""

from __future__ import annotations

from pathlib import Path

from berth.common.db import Database
from berth.common.migrations import Migrations

_HERE = Path(__file__).parent

# Their own version tables, so either schema may share a database with another service's (the
# API database with placement's, say); an API database and a cell database may share one too.
API_MIGRATIONS = Migrations(_HERE / "api_migrations", "compute_api_alembic_version")
CELL_MIGRATIONS = Migrations(_HERE / "cell_migrations", "compute_cell_alembic_version")


def sync_api(db: Database) -> bool:
    """Upgrade the API database to head; True when it changed. Safe to run at every start."""
    return API_MIGRATIONS.upgrade(db)


def sync_cell(db: Database) -> bool:
    """Upgrade a cell database (cell0 too) to head; True when it changed. Safe at every start."""
    return CELL_MIGRATIONS.upgrade(db)

"""The Alembic migrations of both compute databases build exactly their schema modules."""

from __future__ import annotations

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from berth.common.db import Database
from berth.common.migrations import Migrations
from berth.compute.db import api_schema, cell_schema, migrate


def _differences(db: Database, metadata: sa.MetaData, migrations: Migrations) -> list[object]:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": migrations.version_table}
        )
        return list(compare_metadata(context, metadata))


def test_api_migrations_match_the_schema_module(api_db: Database) -> None:
    assert _differences(api_db, api_schema.metadata, migrate.API_MIGRATIONS) == []


def test_cell_migrations_match_the_schema_module(cell_db: Database) -> None:
    assert _differences(cell_db, cell_schema.metadata, migrate.CELL_MIGRATIONS) == []


def test_sync_is_idempotent_and_reaches_the_head(api_db: Database, cell_db: Database) -> None:
    assert migrate.sync_api(api_db) is False
    assert migrate.sync_cell(cell_db) is False
    assert migrate.API_MIGRATIONS.current(api_db) == migrate.API_MIGRATIONS.head()
    assert migrate.CELL_MIGRATIONS.current(cell_db) == migrate.CELL_MIGRATIONS.head()


def test_both_schemas_fit_in_one_database() -> None:
    """Their tables and version tables differ, so an all-in-one deployment may keep the API
    database and a cell's in one file."""
    db = Database("sqlite://")
    assert migrate.sync_api(db) is True
    assert migrate.sync_cell(db) is True
    with db.engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
    assert set(api_schema.metadata.tables) | set(cell_schema.metadata.tables) <= tables
    assert {"compute_api_alembic_version", "compute_cell_alembic_version"} <= tables
    assert not set(api_schema.metadata.tables) & set(cell_schema.metadata.tables)
    db.dispose()

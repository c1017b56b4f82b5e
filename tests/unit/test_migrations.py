"""The Alembic migrations build exactly the schema the code queries, on every backend."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from berth.common.db import Database
from berth.placement.store import migrate, schema


def test_migrations_match_the_schema_module(placement_db: Database) -> None:
    with placement_db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        differences = compare_metadata(context, schema.metadata)
    assert differences == []


def test_sync_is_idempotent_and_reports_the_head(placement_db: Database) -> None:
    assert migrate.sync(placement_db) is False
    assert migrate.current_revision(placement_db) == migrate.head_revision()


def test_standard_names_are_present(placement_db: Database) -> None:
    import os_resource_classes
    import os_traits
    import sqlalchemy as sa

    with placement_db.read() as conn:
        classes = set(conn.scalars(sa.select(schema.resource_classes.c.name)))
        traits = set(conn.scalars(sa.select(schema.traits.c.name)))
    assert set(os_resource_classes.STANDARDS) <= classes
    assert set(os_traits.get_traits()) <= traits


def test_network_migrations_match_the_schema_module(network_db: Database) -> None:
    from berth.network.store import migrate as network_migrate
    from berth.network.store import schema as network_schema

    with network_db.engine.connect() as conn:
        context = MigrationContext.configure(
            conn, opts={"compare_type": True, "version_table": "network_alembic_version"}
        )
        differences = compare_metadata(context, network_schema.metadata)
    assert differences == []
    assert network_migrate.sync(network_db) is False

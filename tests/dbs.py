"""The databases the suite runs against: SQLite always, PostgreSQL and MariaDB when their URLs are set.

``BERTH_TEST_POSTGRESQL_URL`` and ``BERTH_TEST_MYSQL_URL`` name a server and a database the tests may
own (``.ci/run`` sets them). Each pytest-xdist worker gets its own database on each server, created
here, so parallel workers never share rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa

from berth.common.db import Database, normalise_url
from berth.network.store import migrate as network_migrate
from berth.network.store import schema as network_schema
from berth.placement.store import changes, migrate, schema
from berth.placement.store.database import open_database

ENV = {"postgresql": "BERTH_TEST_POSTGRESQL_URL", "mysql": "BERTH_TEST_MYSQL_URL"}


def backends() -> list[str]:
    """SQLite, then every server backend whose URL the environment gives."""
    return ["sqlite"] + [name for name, var in ENV.items() if os.environ.get(var)]


def server_url(backend: str, worker: str, suffix: str = "") -> str:
    """A database of this worker's own on the server, created if missing."""
    base = sa.make_url(normalise_url(os.environ[ENV[backend]]))
    name = f"{base.database}_{worker}{suffix}"
    admin_db = "postgres" if backend == "postgresql" else None
    admin = sa.create_engine(base.set(database=admin_db), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if backend == "postgresql":
            exists = conn.scalar(
                sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}
            )
            if not exists:
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        else:
            conn.exec_driver_sql(
                f"CREATE DATABASE IF NOT EXISTS `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
            )
    admin.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def fresh_database(backend: str, worker: str, tmp_dir: Path) -> Database:
    """A migrated database for one backend, emptied of everything but the standard names."""
    url = (
        f"sqlite:///{tmp_dir / 'placement.db'}"
        if backend == "sqlite"
        else server_url(backend, worker)
    )
    db = open_database(url)
    migrate.sync(db)
    empty(db)
    return db


def empty(db: Database) -> None:
    """Delete every row a test may have written; standard classes and traits stay."""
    with db.write() as conn:
        # Providers reference each other; cut the links so they can be deleted in any order.
        providers = schema.resource_providers
        conn.execute(providers.update().values(parent_provider_id=None, root_provider_id=None))
        for table in reversed(schema.metadata.sorted_tables):
            if table.name == "placement_change_sequence":
                continue
            if table.name in ("resource_classes", "traits"):
                conn.execute(table.delete().where(table.c.name.like("CUSTOM\\_%", escape="\\")))
            else:
                conn.execute(table.delete())
        changes.publish_everything(conn)


def fresh_network_database(backend: str, worker: str, tmp_dir: Path) -> Database:
    """A migrated, empty network database (its own database beside the placement one)."""
    url = (
        f"sqlite:///{tmp_dir / 'network.db'}"
        if backend == "sqlite"
        else server_url(backend, worker, "_net")
    )
    db = Database(url)
    network_migrate.sync(db)
    with db.write() as conn:
        for table in reversed(network_schema.metadata.sorted_tables):
            conn.execute(table.delete())
    return db


def fresh_migrated_database(
    backend: str,
    worker: str,
    tmp_dir: Path,
    suffix: str,
    sync: Callable[[Database], bool],
    metadata: sa.MetaData,
) -> Database:
    """A database of its own (a SQLite file, or this worker's database named with ``suffix`` on
    the server) brought to head by ``sync`` and emptied of the rows of ``metadata``'s tables:
    how a service with its own schema (the compute API database ``_capi``, a cell ``_cell``)
    gets a clean database per test (the change counters keep their rows)."""
    url = (
        f"sqlite:///{tmp_dir / f'db{suffix}.db'}"
        if backend == "sqlite"
        else server_url(backend, worker, suffix)
    )
    db = Database(url)
    sync(db)
    with db.write() as conn:
        for table in reversed(metadata.sorted_tables):
            if table.name not in _SEEDED:
                conn.execute(table.delete())
    return db


# Tables of one row the migrations write (the counters of changes), kept as they are.
_SEEDED = frozenset({"host_change_sequence", "aggregate_change_count"})

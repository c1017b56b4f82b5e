"""Alembic, driven from code: each service keeps its own migration scripts and version table."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import MetaData
from sqlalchemy.engine import Connection

from berth.common.db import Database


@dataclass(frozen=True)
class Migrations:
    """One service's schema history. Its ``env.py`` reads the version table from the config's
    attributes, so two services can share a database without sharing a history."""

    scripts: Path
    version_table: str = "alembic_version"

    def _config(self, conn: Connection | None = None) -> Config:
        cfg = Config()
        cfg.set_main_option("script_location", str(self.scripts))
        cfg.attributes["version_table"] = self.version_table
        if conn is not None:
            cfg.attributes["connection"] = conn
        return cfg

    def head(self) -> str:
        head = ScriptDirectory.from_config(self._config()).get_current_head()
        assert head is not None, f"{self.scripts} holds no migrations"
        return head

    def current(self, db: Database) -> str | None:
        with db.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"version_table": self.version_table})
            return context.get_current_revision()

    def upgrade(self, db: Database) -> bool:
        """Bring the schema to head; True when it changed."""
        if self.current(db) == self.head():
            return False
        with db.engine.begin() as conn:
            command.upgrade(self._config(conn), "head")
        return True


def run_environment(metadata: MetaData) -> None:
    """The body of a service's ``env.py``: run its migrations on the connection and version
    table ``Migrations`` handed to Alembic."""
    from alembic import context

    attributes = context.config.attributes
    context.configure(
        connection=attributes["connection"],
        target_metadata=metadata,
        render_as_batch=True,
        version_table=attributes["version_table"],
    )
    with context.begin_transaction():
        context.run_migrations()

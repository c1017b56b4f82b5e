"""The placement database's tables (SQLAlchemy Core).

Alembic migrations under ``migrations/`` build exactly this schema; a test compares the two.
Standard resource classes and traits live in the same tables as custom ones, written at start-up from
os-resource-classes and os-traits, so that every query joins one table.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        # PostgreSQL truncates and MariaDB refuses identifiers over 63/64 characters.
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# MySQL compares strings case-insensitively by default; provider names and trait names are not.
_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def _timestamps() -> list[sa.Column[object]]:
    return [
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


def _named(table: str, column: str) -> sa.Table:
    """A table of unique names: resource classes, traits, consumer types, projects, users."""
    return sa.Table(
        table,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(column, sa.String(255), nullable=False, unique=True),
        *_timestamps(),
        **_MYSQL,
    )


resource_providers = sa.Table(
    "resource_providers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("name", sa.String(200), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("root_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), index=True),
    sa.Column("parent_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), index=True),
    *_timestamps(),
    **_MYSQL,
)

resource_classes = _named("resource_classes", "name")

inventories = sa.Table(
    "inventories",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=False
    ),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("total", sa.Integer, nullable=False),
    sa.Column("reserved", sa.Integer, nullable=False),
    sa.Column("min_unit", sa.Integer, nullable=False),
    sa.Column("max_unit", sa.Integer, nullable=False),
    sa.Column("step_size", sa.Integer, nullable=False),
    sa.Column("allocation_ratio", sa.Float, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint("resource_provider_id", "resource_class_id"),
    sa.Index(None, "resource_class_id"),
    **_MYSQL,
)

projects = _named("projects", "external_id")

users = _named("users", "external_id")

consumer_types = _named("consumer_types", "name")

consumers = sa.Table(
    "consumers",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    sa.Column("project_id", sa.Integer, sa.ForeignKey("projects.id"), nullable=False),
    sa.Column("user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False, default=0),
    sa.Column("consumer_type_id", sa.Integer, sa.ForeignKey("consumer_types.id"), nullable=True),
    *_timestamps(),
    sa.Index(None, "project_id", "user_id"),
    **_MYSQL,
)

allocations = sa.Table(
    "allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "resource_provider_id", sa.Integer, sa.ForeignKey("resource_providers.id"), nullable=False
    ),
    sa.Column("consumer_id", sa.String(36), nullable=False),
    sa.Column(
        "resource_class_id", sa.Integer, sa.ForeignKey("resource_classes.id"), nullable=False
    ),
    sa.Column("used", sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index(None, "resource_provider_id", "resource_class_id"),
    sa.Index(None, "consumer_id"),
    **_MYSQL,
)

traits = _named("traits", "name")

resource_provider_traits = sa.Table(
    "resource_provider_traits",
    metadata,
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        primary_key=True,
    ),
    sa.Column("trait_id", sa.Integer, sa.ForeignKey("traits.id"), primary_key=True, index=True),
    **_MYSQL,
)

placement_aggregates = sa.Table(
    "placement_aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(36), nullable=False, unique=True),
    **_MYSQL,
)

resource_provider_aggregates = sa.Table(
    "resource_provider_aggregates",
    metadata,
    sa.Column(
        "resource_provider_id",
        sa.Integer,
        sa.ForeignKey("resource_providers.id"),
        primary_key=True,
    ),
    sa.Column(
        "aggregate_id",
        sa.Integer,
        sa.ForeignKey("placement_aggregates.id"),
        primary_key=True,
        index=True,
    ),
    **_MYSQL,
)

# The change sequence (DESIGN.md, "Placement at scale"): every write transaction that changes what
# the candidate index holds advances ``value`` by one and logs the providers it changed under that
# number. The row lock on ``value`` orders those transactions, so their numbers commit in order and
# a reader that sees number N sees every change up to N.
change_sequence = sa.Table(
    "placement_change_sequence",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.BigInteger, nullable=False),
    **_MYSQL,
)

changes = sa.Table(
    "placement_changes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("seq", sa.BigInteger, nullable=False, index=True),
    # "provider": the provider ``provider_id`` changed (or is gone); "names": resource classes or
    # traits were added, renamed or removed; "everything": reload it all (bulk loads).
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("provider_id", sa.Integer, nullable=True),
    **_MYSQL,
)

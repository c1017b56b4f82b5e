"""RBAC policies: who else may use a network or a QoS policy. The shared flags (and a network's
router:external) become wildcard entries.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

import uuid

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    rbac = op.create_table(
        "rbac_policies",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("object_type", sa.String(length=32), nullable=False),
        sa.Column("object_id", sa.String(length=36), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target_project", sa.String(length=255), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rbac_policies")),
        sa.UniqueConstraint(
            "object_type",
            "object_id",
            "action",
            "target_project",
            name=op.f("uq_rbac_policies_object_type_object_id_action_target_project"),
        ),
        **_MYSQL,
    )
    op.create_index(op.f("ix_rbac_policies_project_id"), "rbac_policies", ["project_id"])
    op.create_index(op.f("ix_rbac_policies_object_id"), "rbac_policies", ["object_id"])
    # Each flag that becomes a wildcard entry: (table, column, object type, action).
    for table, column, object_type, action in _FLAGS:
        _grant_to_all(rbac, table, column, object_type, action)
        # A plain DROP COLUMN (SQLite has it since 3.35): a batch copy of the table would drop
        # the old one under foreign keys, and cascade to what refers to it.
        op.drop_column(table, column)


_FLAGS = (
    ("networks", "shared", "network", "access_as_shared"),
    ("networks", "router_external", "network", "access_as_external"),
    ("qos_policies", "shared", "qos_policy", "access_as_shared"),
)


def _grant_to_all(rbac: sa.Table, table: str, column: str, object_type: str, action: str) -> None:
    """A wildcard entry, made by the owner, for each row of ``table`` whose flag is set."""
    rows = sa.table(table, sa.column("id"), sa.column("project_id"), sa.column(column))
    flagged = op.get_bind().execute(sa.select(rows.c.id, rows.c.project_id).where(rows.c[column]))
    entries = [
        {
            "id": str(uuid.uuid4()),
            "project_id": project_id,
            "object_type": object_type,
            "object_id": object_id,
            "action": action,
            "target_project": "*",
        }
        for object_id, project_id in flagged
    ]
    if entries:
        op.bulk_insert(rbac, entries)


def downgrade() -> None:
    for table, column, object_type, action in _FLAGS:
        op.add_column(
            table, sa.Column(column, sa.Boolean(), nullable=False, server_default=sa.false())
        )
        op.execute(
            f"UPDATE {table} SET {column} = TRUE WHERE id IN (SELECT object_id FROM "
            f"rbac_policies WHERE object_type = '{object_type}' AND action = '{action}' "
            "AND target_project = '*')"
        )
    op.drop_table("rbac_policies")

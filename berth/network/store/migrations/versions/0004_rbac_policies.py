"""RBAC policies: who else may use a network or a QoS policy. A shared flag becomes a wildcard
entry.

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
    for table, object_type in (("networks", "network"), ("qos_policies", "qos_policy")):
        _share_with_all(rbac, table, object_type)
        # A plain DROP COLUMN (SQLite has it since 3.35): a batch copy of the table would drop
        # the old one under foreign keys, and cascade to what refers to it.
        op.drop_column(table, "shared")


def _share_with_all(rbac: sa.Table, table: str, object_type: str) -> None:
    """A wildcard entry, made by the owner, for each shared row of ``table``."""
    rows = sa.table(table, sa.column("id"), sa.column("project_id"), sa.column("shared"))
    shared = op.get_bind().execute(sa.select(rows.c.id, rows.c.project_id).where(rows.c.shared))
    entries = [
        {
            "id": str(uuid.uuid4()),
            "project_id": project_id,
            "object_type": object_type,
            "object_id": object_id,
            "action": "access_as_shared",
            "target_project": "*",
        }
        for object_id, project_id in shared
    ]
    if entries:
        op.bulk_insert(rbac, entries)


def downgrade() -> None:
    for table, object_type in (("networks", "network"), ("qos_policies", "qos_policy")):
        op.add_column(
            table, sa.Column("shared", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        op.execute(
            f"UPDATE {table} SET shared = TRUE WHERE id IN (SELECT object_id FROM rbac_policies "
            f"WHERE object_type = '{object_type}' AND target_project = '*')"
        )
    op.drop_table("rbac_policies")

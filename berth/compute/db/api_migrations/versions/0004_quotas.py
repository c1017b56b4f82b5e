"""Quotas: projects' limits, quota classes' limits, and the rows that serialise quota checks.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    op.create_table(
        "quotas",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quotas")),
        sa.UniqueConstraint("project_id", "resource", name=op.f("uq_quotas_project_id_resource")),
        **_MYSQL,
    )
    op.create_table(
        "quota_classes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("class_name", sa.String(length=255), nullable=False),
        sa.Column("resource", sa.String(length=255), nullable=False),
        sa.Column("hard_limit", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quota_classes")),
        sa.UniqueConstraint(
            "class_name", "resource", name=op.f("uq_quota_classes_class_name_resource")
        ),
        **_MYSQL,
    )
    op.create_table(
        "quota_locks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quota_locks")),
        sa.UniqueConstraint("kind", "owner", name=op.f("uq_quota_locks_kind_owner")),
        **_MYSQL,
    )

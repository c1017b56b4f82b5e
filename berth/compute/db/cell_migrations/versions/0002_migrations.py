"""Migrations: one row per move of a server, its uuid the consumer of the source's allocation.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "migrations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("migration_type", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source_compute", sa.String(length=255), nullable=True),
        sa.Column("source_node", sa.String(length=255), nullable=True),
        sa.Column("dest_compute", sa.String(length=255), nullable=True),
        sa.Column("dest_node", sa.String(length=255), nullable=True),
        sa.Column("dest_host", sa.String(length=255), nullable=True),
        sa.Column("old_flavor", sa.JSON(), nullable=False),
        sa.Column("new_flavor", sa.JSON(), nullable=False),
        sa.Column("source_port_allocations", sa.JSON(), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_migrations")),
        sa.UniqueConstraint("uuid", name=op.f("uq_migrations_uuid")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("migrations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_migrations_instance_uuid"), ["instance_uuid"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_migrations_source_compute"), ["source_compute"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_migrations_dest_compute"), ["dest_compute"], unique=False
        )


def downgrade() -> None:
    op.drop_table("migrations")

"""The build queue: servers that wait for room instead of going to ERROR.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    op.create_table(
        "build_queue",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("queued_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retrying_since", sa.DateTime(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("diagnosis", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_build_queue")),
        sa.UniqueConstraint("instance_uuid", name=op.f("uq_build_queue_instance_uuid")),
        **_MYSQL,
    )
    op.create_index(op.f("ix_build_queue_expires_at"), "build_queue", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_build_queue_expires_at"), table_name="build_queue")
    op.drop_table("build_queue")

"""The change sequence of what the scheduler's cache of hosts holds, so that a scheduling pass
reads what changed since the last, not every host.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    sequence = op.create_table(
        "host_change_sequence",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_change_sequence")),
        **_MYSQL,
    )
    op.bulk_insert(sequence, [{"id": 1, "value": 0}])
    op.create_table(
        "host_changes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_host_changes")),
        **_MYSQL,
    )
    op.create_index(op.f("ix_host_changes_seq"), "host_changes", ["seq"])


def downgrade() -> None:
    op.drop_index(op.f("ix_host_changes_seq"), table_name="host_changes")
    op.drop_table("host_changes")
    op.drop_table("host_change_sequence")

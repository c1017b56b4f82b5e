"""The change sequence that keeps every worker's candidate index current.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    sequence = op.create_table(
        "placement_change_sequence",
        sa.Column("id", sa.Integer, autoincrement=False),
        sa.Column("value", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_placement_change_sequence"),
        **MYSQL,
    )
    op.bulk_insert(sequence, [{"id": 1, "value": 0}])
    op.create_table(
        "placement_changes",
        sa.Column("id", sa.Integer, autoincrement=True),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("scope", sa.String(16), nullable=False),
        sa.Column("provider_id", sa.Integer, nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_placement_changes"),
        **MYSQL,
    )
    op.create_index("ix_placement_changes_seq", "placement_changes", ["seq"])


def downgrade() -> None:
    op.drop_table("placement_changes")
    op.drop_table("placement_change_sequence")

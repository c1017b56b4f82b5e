"""A count of the aggregates' writes, so that a scheduling pass reads the aggregates again only
when they changed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    count = op.create_table(
        "aggregate_change_count",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("value", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_aggregate_change_count")),
        **_MYSQL,
    )
    op.bulk_insert(count, [{"id": 1, "value": 0}])


def downgrade() -> None:
    op.drop_table("aggregate_change_count")

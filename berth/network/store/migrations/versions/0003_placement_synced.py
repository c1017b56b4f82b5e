"""What the Placement reporter last made each provider show, and the generation after.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def upgrade() -> None:
    op.create_table(
        "placement_synced",
        sa.Column("provider_uuid", sa.String(length=36), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("provider_uuid", name=op.f("pk_placement_synced")),
        **_MYSQL,
    )


def downgrade() -> None:
    op.drop_table("placement_synced")

"""A change count on compute nodes and services, so that the scheduler reads again only the
hosts that changed since its last read.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table in ("compute_nodes", "services"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("change_count", sa.Integer(), nullable=False, server_default="0")
            )


def downgrade() -> None:
    for table in ("services", "compute_nodes"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("change_count")

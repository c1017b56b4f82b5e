"""What each compute node last reported to Placement, so that a restart need not read it again.

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


def upgrade() -> None:
    with op.batch_alter_table("compute_nodes", schema=None) as batch_op:
        batch_op.add_column(sa.Column("placement_fingerprint", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("placement_generation", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("compute_nodes", schema=None) as batch_op:
        batch_op.drop_column("placement_generation")
        batch_op.drop_column("placement_fingerprint")

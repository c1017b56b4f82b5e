"""A scheduling fault's diagnosis as data, beside its text.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instance_faults", schema=None) as batch_op:
        batch_op.add_column(sa.Column("diagnosis", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instance_faults", schema=None) as batch_op:
        batch_op.drop_column("diagnosis")

"""Cross-cell moves: hidden copies of instances and migrations, and which moves cross cells.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("hidden", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    with op.batch_alter_table("migrations", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("cross_cell_move", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("hidden", sa.Boolean(), server_default=sa.false(), nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("migrations", schema=None) as batch_op:
        batch_op.drop_column("hidden")
        batch_op.drop_column("cross_cell_move")
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_column("hidden")

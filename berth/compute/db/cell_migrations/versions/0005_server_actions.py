"""Server actions and server update: a lock with who took it, a description, access addresses.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("locked", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(sa.Column("locked_by", sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column("description", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("access_ip_v4", sa.String(length=39), nullable=True))
        batch_op.add_column(sa.Column("access_ip_v6", sa.String(length=39), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_column("access_ip_v6")
        batch_op.drop_column("access_ip_v4")
        batch_op.drop_column("description")
        batch_op.drop_column("locked_by")
        batch_op.drop_column("locked")

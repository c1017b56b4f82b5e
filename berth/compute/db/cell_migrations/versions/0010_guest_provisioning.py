"""What a server gives its guest: disk config, config drive, user data, and what the next
spawn injects (the admin password, personality files).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("auto_disk_config", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch_op.add_column(sa.Column("config_drive", sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column("user_data", sa.Text(), nullable=True))
        batch_op.add_column(sa.Column("injected", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.drop_column("injected")
        batch_op.drop_column("user_data")
        batch_op.drop_column("config_drive")
        batch_op.drop_column("auto_disk_config")

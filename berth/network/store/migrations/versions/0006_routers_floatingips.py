"""Routers and floating IPs.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
# 0005 (security groups) comes from the branch that adds them.
down_revision = "0005"
branch_labels = None
depends_on = None

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def _standard() -> list[sa.Column[object]]:
    return [
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "routers",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("gw_network_id", sa.String(length=36), nullable=True),
        sa.Column("enable_snat", sa.Boolean(), nullable=False),
        sa.Column("routes", sa.JSON(), nullable=False),
        *_standard(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_routers")),
        **_MYSQL,
    )
    op.create_index(op.f("ix_routers_project_id"), "routers", ["project_id"])
    op.create_index(op.f("ix_routers_gw_network_id"), "routers", ["gw_network_id"])
    op.create_table(
        "floatingips",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("floating_network_id", sa.String(length=36), nullable=False),
        sa.Column("floating_port_id", sa.String(length=36), nullable=False),
        sa.Column("floating_ip_address", sa.String(length=64), nullable=False),
        sa.Column("port_id", sa.String(length=36), nullable=True),
        sa.Column("fixed_ip_address", sa.String(length=64), nullable=True),
        sa.Column("router_id", sa.String(length=36), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        *_standard(),
        sa.ForeignKeyConstraint(
            ["floating_port_id"], ["ports.id"], name=op.f("fk_floatingips_floating_port_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_floatingips")),
        **_MYSQL,
    )
    for column in ("project_id", "floating_network_id", "port_id", "router_id"):
        op.create_index(op.f(f"ix_floatingips_{column}"), "floatingips", [column])


def downgrade() -> None:
    op.drop_table("floatingips")
    op.drop_table("routers")

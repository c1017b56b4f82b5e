"""Security groups, their rules, the groups of each port, and port_security_enabled of
networks and ports.

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

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}


def _standard() -> list[sa.Column[object]]:
    return [
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
    ]


def upgrade() -> None:
    op.create_table(
        "security_groups",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("stateful", sa.Boolean(), nullable=False),
        *_standard(),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_groups")),
        **_MYSQL,
    )
    op.create_index(op.f("ix_security_groups_project_id"), "security_groups", ["project_id"])
    op.create_table(
        "default_security_groups",
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["security_group_id"],
            ["security_groups.id"],
            name=op.f("fk_default_security_groups_security_group_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("project_id", name=op.f("pk_default_security_groups")),
        **_MYSQL,
    )
    op.create_table(
        "security_group_rules",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("ethertype", sa.String(length=8), nullable=False),
        sa.Column("protocol", sa.String(length=40), nullable=True),
        sa.Column("port_range_min", sa.Integer(), nullable=True),
        sa.Column("port_range_max", sa.Integer(), nullable=True),
        sa.Column("remote_ip_prefix", sa.String(length=64), nullable=True),
        sa.Column("remote_group_id", sa.String(length=36), nullable=True),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        *_standard(),
        sa.ForeignKeyConstraint(
            ["security_group_id"],
            ["security_groups.id"],
            name=op.f("fk_security_group_rules_security_group_id"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["remote_group_id"],
            ["security_groups.id"],
            name=op.f("fk_security_group_rules_remote_group_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_security_group_rules")),
        sa.UniqueConstraint(
            "security_group_id",
            "fingerprint",
            name=op.f("uq_security_group_rules_security_group_id_fingerprint"),
        ),
        **_MYSQL,
    )
    for column in ("security_group_id", "project_id", "remote_group_id"):
        op.create_index(op.f(f"ix_security_group_rules_{column}"), "security_group_rules", [column])
    op.create_table(
        "port_security_groups",
        sa.Column("port_id", sa.String(length=36), nullable=False),
        sa.Column("security_group_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["port_id"],
            ["ports.id"],
            name=op.f("fk_port_security_groups_port_id"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["security_group_id"],
            ["security_groups.id"],
            name=op.f("fk_port_security_groups_security_group_id"),
        ),
        sa.PrimaryKeyConstraint(
            "port_id", "security_group_id", name=op.f("pk_port_security_groups")
        ),
        **_MYSQL,
    )
    op.create_index(
        op.f("ix_port_security_groups_security_group_id"),
        "port_security_groups",
        ["security_group_id"],
    )
    # Existing networks and ports keep port security on, the default they always showed.
    for table in ("networks", "ports"):
        op.add_column(
            table,
            sa.Column(
                "port_security_enabled", sa.Boolean(), nullable=False, server_default=sa.true()
            ),
        )


def downgrade() -> None:
    op.drop_column("ports", "port_security_enabled")
    op.drop_column("networks", "port_security_enabled")
    op.drop_table("port_security_groups")
    op.drop_table("security_group_rules")
    op.drop_table("default_security_groups")
    op.drop_table("security_groups")

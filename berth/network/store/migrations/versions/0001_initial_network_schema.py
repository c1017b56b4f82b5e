"""The initial network schema.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("agent_type", sa.String(length=64), nullable=False),
        sa.Column("binary", sa.String(length=255), nullable=False),
        sa.Column("topic", sa.String(length=255), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("availability_zone", sa.String(length=255), nullable=True),
        sa.Column("configurations", sa.JSON(), nullable=False),
        sa.Column("resources_synced", sa.Boolean(), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("agent_type", "host", name=op.f("uq_agents_agent_type_host")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_agents_host"), ["host"], unique=False)

    op.create_table(
        "qos_policies",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_qos_policies")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("qos_policies", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_qos_policies_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "networks",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("router_external", sa.Boolean(), nullable=False),
        sa.Column("mtu", sa.Integer(), nullable=False),
        sa.Column("qos_policy_id", sa.String(length=36), nullable=True),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["qos_policy_id"], ["qos_policies.id"], name=op.f("fk_networks_qos_policy_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_networks")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("networks", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_networks_project_id"), ["project_id"], unique=False)

    op.create_table(
        "qos_rules",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("policy_id", sa.String(length=36), nullable=False),
        sa.Column("rule_type", sa.String(length=32), nullable=False),
        sa.Column("direction", sa.String(length=16), nullable=False),
        sa.Column("max_kbps", sa.BigInteger(), nullable=True),
        sa.Column("max_burst_kbps", sa.BigInteger(), nullable=True),
        sa.Column("min_kbps", sa.BigInteger(), nullable=True),
        sa.Column("min_kpps", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["policy_id"],
            ["qos_policies.id"],
            name=op.f("fk_qos_rules_policy_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_qos_rules")),
        sa.UniqueConstraint(
            "policy_id",
            "rule_type",
            "direction",
            name=op.f("uq_qos_rules_policy_id_rule_type_direction"),
        ),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("qos_rules", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_qos_rules_policy_id"), ["policy_id"], unique=False)

    op.create_table(
        "ports",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("mac_address", sa.String(length=32), nullable=False),
        sa.Column("admin_state_up", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("device_id", sa.String(length=255), nullable=False),
        sa.Column("device_owner", sa.String(length=255), nullable=False),
        sa.Column("qos_policy_id", sa.String(length=36), nullable=True),
        sa.Column("ip_allocation", sa.String(length=16), nullable=False),
        sa.Column("binding_host", sa.String(length=255), nullable=False),
        sa.Column("binding_vnic_type", sa.String(length=32), nullable=False),
        sa.Column("binding_profile", sa.JSON(), nullable=False),
        sa.Column("binding_vif_type", sa.String(length=32), nullable=False),
        sa.Column("binding_vif_details", sa.JSON(), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["network_id"], ["networks.id"], name=op.f("fk_ports_network_id")),
        sa.ForeignKeyConstraint(
            ["qos_policy_id"], ["qos_policies.id"], name=op.f("fk_ports_qos_policy_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ports")),
        sa.UniqueConstraint(
            "network_id", "mac_address", name=op.f("uq_ports_network_id_mac_address")
        ),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("ports", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_ports_binding_host"), ["binding_host"], unique=False)
        batch_op.create_index(batch_op.f("ix_ports_device_id"), ["device_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_ports_project_id"), ["project_id"], unique=False)

    op.create_table(
        "segments",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("network_type", sa.String(length=32), nullable=False),
        sa.Column("physical_network", sa.String(length=64), nullable=True),
        sa.Column("segmentation_id", sa.Integer(), nullable=True),
        sa.Column("segment_index", sa.Integer(), nullable=False),
        sa.Column("allocation_key", sa.String(length=128), nullable=False),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["network_id"], ["networks.id"], name=op.f("fk_segments_network_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segments")),
        sa.UniqueConstraint("allocation_key", name=op.f("uq_segments_allocation_key")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("segments", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_segments_network_id"), ["network_id"], unique=False)

    op.create_table(
        "port_bindings",
        sa.Column("port_id", sa.String(length=36), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("vnic_type", sa.String(length=32), nullable=False),
        sa.Column("profile", sa.JSON(), nullable=False),
        sa.Column("vif_type", sa.String(length=32), nullable=False),
        sa.Column("vif_details", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["port_id"], ["ports.id"], name=op.f("fk_port_bindings_port_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("port_id", "host", name=op.f("pk_port_bindings")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    op.create_table(
        "subnets",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("segment_id", sa.String(length=36), nullable=True),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.String(length=255), nullable=False),
        sa.Column("ip_version", sa.Integer(), nullable=False),
        sa.Column("cidr", sa.String(length=64), nullable=False),
        sa.Column("gateway_ip", sa.String(length=64), nullable=True),
        sa.Column("allocation_pools", sa.JSON(), nullable=False),
        sa.Column("dns_nameservers", sa.JSON(), nullable=False),
        sa.Column("host_routes", sa.JSON(), nullable=False),
        sa.Column("enable_dhcp", sa.Boolean(), nullable=False),
        sa.Column("ipv6_ra_mode", sa.String(length=16), nullable=True),
        sa.Column("ipv6_address_mode", sa.String(length=16), nullable=True),
        sa.Column("revision_number", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["network_id"], ["networks.id"], name=op.f("fk_subnets_network_id"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["segment_id"], ["segments.id"], name=op.f("fk_subnets_segment_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subnets")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("subnets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_subnets_network_id"), ["network_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_subnets_project_id"), ["project_id"], unique=False)

    op.create_table(
        "ip_allocations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("port_id", sa.String(length=36), nullable=False),
        sa.Column("subnet_id", sa.String(length=36), nullable=False),
        sa.Column("network_id", sa.String(length=36), nullable=False),
        sa.Column("ip_address", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["port_id"], ["ports.id"], name=op.f("fk_ip_allocations_port_id"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["subnet_id"], ["subnets.id"], name=op.f("fk_ip_allocations_subnet_id")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ip_allocations")),
        sa.UniqueConstraint(
            "subnet_id", "ip_address", name=op.f("uq_ip_allocations_subnet_id_ip_address")
        ),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("ip_allocations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_ip_allocations_network_id"), ["network_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_ip_allocations_port_id"), ["port_id"], unique=False)

"""The initial compute cell schema.

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
        "instance_actions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("action", sa.String(length=255), nullable=False),
        sa.Column("request_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("start_time", sa.DateTime(), nullable=False),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("message", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_actions")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("instance_actions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_instance_actions_instance_uuid"), ["instance_uuid"], unique=False
        )

    op.create_table(
        "instance_faults",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=False),
        sa.Column("code", sa.Integer(), nullable=False),
        sa.Column("message", sa.String(length=255), nullable=False),
        sa.Column("details", sa.Text(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_faults")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("instance_faults", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_instance_faults_instance_uuid"), ["instance_uuid"], unique=False
        )

    op.create_table(
        "instances",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.String(length=255), nullable=False),
        sa.Column("user_id", sa.String(length=255), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("node", sa.String(length=255), nullable=True),
        sa.Column("vm_state", sa.String(length=32), nullable=False),
        sa.Column("task_state", sa.String(length=32), nullable=True),
        sa.Column("power_state", sa.Integer(), nullable=False),
        sa.Column("flavor", sa.JSON(), nullable=False),
        sa.Column("image_ref", sa.String(length=255), nullable=False),
        sa.Column("availability_zone", sa.String(length=255), nullable=True),
        sa.Column("key_name", sa.String(length=255), nullable=True),
        sa.Column("metadata", sa.JSON(), nullable=False),
        sa.Column("network_info", sa.JSON(), nullable=False),
        sa.Column("launched_at", sa.DateTime(), nullable=True),
        sa.Column("terminated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instances")),
        sa.UniqueConstraint("uuid", name=op.f("uq_instances_uuid")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("instances", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_instances_host"), ["host"], unique=False)
        batch_op.create_index(batch_op.f("ix_instances_project_id"), ["project_id"], unique=False)

    op.create_table(
        "services",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("binary", sa.String(length=255), nullable=False),
        sa.Column("topic", sa.String(length=255), nullable=False),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.String(length=255), nullable=True),
        sa.Column("forced_down", sa.Boolean(), nullable=False),
        sa.Column("last_seen_up", sa.DateTime(), nullable=True),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_services")),
        sa.UniqueConstraint("host", "binary", name=op.f("uq_services_host_binary")),
        sa.UniqueConstraint("uuid", name=op.f("uq_services_uuid")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    op.create_table(
        "compute_nodes",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("service_id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("hypervisor_hostname", sa.String(length=255), nullable=False),
        sa.Column("hypervisor_type", sa.String(length=255), nullable=False),
        sa.Column("vcpus", sa.Integer(), nullable=False),
        sa.Column("memory_mb", sa.Integer(), nullable=False),
        sa.Column("local_gb", sa.Integer(), nullable=False),
        sa.Column("vcpus_used", sa.Integer(), nullable=False),
        sa.Column("memory_mb_used", sa.Integer(), nullable=False),
        sa.Column("local_gb_used", sa.Integer(), nullable=False),
        sa.Column("running_vms", sa.Integer(), nullable=False),
        sa.Column("cpu_allocation_ratio", sa.Float(), nullable=False),
        sa.Column("ram_allocation_ratio", sa.Float(), nullable=False),
        sa.Column("disk_allocation_ratio", sa.Float(), nullable=False),
        sa.Column("reserved_host_memory_mb", sa.Integer(), nullable=False),
        sa.Column("reserved_host_disk_mb", sa.Integer(), nullable=False),
        sa.Column("reserved_host_cpus", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["services.id"],
            name=op.f("fk_compute_nodes_service_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compute_nodes")),
        sa.UniqueConstraint(
            "hypervisor_hostname", name=op.f("uq_compute_nodes_hypervisor_hostname")
        ),
        sa.UniqueConstraint("uuid", name=op.f("uq_compute_nodes_uuid")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("compute_nodes", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_compute_nodes_host"), ["host"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_compute_nodes_service_id"), ["service_id"], unique=False
        )

    op.create_table(
        "instance_action_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("action_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(length=255), nullable=False),
        sa.Column("start_time", sa.DateTime(), nullable=False),
        sa.Column("finish_time", sa.DateTime(), nullable=True),
        sa.Column("result", sa.String(length=255), nullable=True),
        sa.Column("host", sa.String(length=255), nullable=True),
        sa.Column("details", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["instance_actions.id"],
            name=op.f("fk_instance_action_events_action_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_instance_action_events")),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("instance_action_events", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_instance_action_events_action_id"), ["action_id"], unique=False
        )

    op.create_table(
        "pci_devices",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("compute_node_id", sa.Integer(), nullable=False),
        sa.Column("address", sa.String(length=16), nullable=False),
        sa.Column("dev_type", sa.String(length=8), nullable=False),
        sa.Column("parent_addr", sa.String(length=16), nullable=True),
        sa.Column("dev_name", sa.String(length=255), nullable=True),
        sa.Column("physical_network", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("instance_uuid", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["compute_node_id"],
            ["compute_nodes.id"],
            name=op.f("fk_pci_devices_compute_node_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_pci_devices")),
        sa.UniqueConstraint(
            "compute_node_id", "address", name=op.f("uq_pci_devices_compute_node_id_address")
        ),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
        mysql_engine="InnoDB",
    )
    with op.batch_alter_table("pci_devices", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_pci_devices_instance_uuid"), ["instance_uuid"], unique=False
        )

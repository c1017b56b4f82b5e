"""A cell database's tables (SQLAlchemy Core): one database per cell, cell0 included.

Alembic migrations under ``cell_migrations/`` build exactly this schema; a test compares the two.
The host agent of a host owns its service, compute node and PCI device rows; the conductors
write instances. Uniqueness that must hold under concurrent writers is a constraint here: one
service per (host, binary), one compute node per hypervisor hostname, one PCI device per
(compute node, address).
"""

from __future__ import annotations

import sqlalchemy as sa

from berth.compute.db._tables import MYSQL, NAME, UUID, new_metadata, timestamps

metadata = new_metadata()

services = sa.Table(
    "services",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("host", sa.String(NAME), nullable=False),
    # berth-compute, berth-conductor, ...
    sa.Column("binary", sa.String(NAME), nullable=False),
    sa.Column("topic", sa.String(NAME), nullable=False),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("disabled_reason", sa.String(NAME), nullable=True),
    # An operator's word that the service is down, whatever its heartbeat says.
    sa.Column("forced_down", sa.Boolean, nullable=False, default=False),
    sa.Column("last_seen_up", sa.DateTime, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=0),
    # Bumped by every write but the heartbeat (``berth.compute.db.services``): the scheduler
    # reads a service again when it changed, and follows its heartbeat by time.
    sa.Column("change_count", sa.Integer, nullable=False, default=0, server_default="0"),
    *timestamps(),
    sa.UniqueConstraint("host", "binary"),
    **MYSQL,
)

compute_nodes = sa.Table(
    "compute_nodes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # Also the uuid of the node's root resource provider in Placement.
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column(
        "service_id",
        sa.Integer,
        sa.ForeignKey("services.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("host", sa.String(NAME), nullable=False, index=True),
    sa.Column("hypervisor_hostname", sa.String(NAME), nullable=False, unique=True),
    sa.Column("hypervisor_type", sa.String(NAME), nullable=False, default="fake"),
    sa.Column("vcpus", sa.Integer, nullable=False, default=0),
    sa.Column("memory_mb", sa.Integer, nullable=False, default=0),
    sa.Column("local_gb", sa.Integer, nullable=False, default=0),
    sa.Column("vcpus_used", sa.Integer, nullable=False, default=0),
    sa.Column("memory_mb_used", sa.Integer, nullable=False, default=0),
    sa.Column("local_gb_used", sa.Integer, nullable=False, default=0),
    sa.Column("running_vms", sa.Integer, nullable=False, default=0),
    sa.Column("cpu_allocation_ratio", sa.Float, nullable=False, default=4.0),
    sa.Column("ram_allocation_ratio", sa.Float, nullable=False, default=1.0),
    sa.Column("disk_allocation_ratio", sa.Float, nullable=False, default=1.0),
    sa.Column("reserved_host_memory_mb", sa.Integer, nullable=False, default=0),
    sa.Column("reserved_host_disk_mb", sa.Integer, nullable=False, default=0),
    sa.Column("reserved_host_cpus", sa.Integer, nullable=False, default=0),
    # What the host last reported to Placement (NodeProvider.fingerprint) and the provider's
    # generation right after: while Placement still shows that generation, nothing was written
    # to the provider since, and a restart need not read it.
    sa.Column("placement_fingerprint", sa.String(64), nullable=True),
    sa.Column("placement_generation", sa.Integer, nullable=True),
    # Bumped by every write to the row (``berth.compute.db.compute_nodes``): the scheduler
    # reads again only the nodes whose count moved since its last read.
    sa.Column("change_count", sa.Integer, nullable=False, default=0, server_default="0"),
    *timestamps(),
    **MYSQL,
)

instances = sa.Table(
    "instances",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("project_id", sa.String(NAME), nullable=False, index=True),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("display_name", sa.String(NAME), nullable=False, default=""),
    sa.Column("hostname", sa.String(NAME), nullable=False, default=""),
    sa.Column("host", sa.String(NAME), nullable=True, index=True),
    sa.Column("node", sa.String(NAME), nullable=True),
    # building, active, stopped, error, deleted, ...
    sa.Column("vm_state", sa.String(32), nullable=False),
    # scheduling, spawning, deleting, ...; NULL when no task runs
    sa.Column("task_state", sa.String(32), nullable=True),
    # 0 no state, 1 running, 3 paused, 4 shutdown, 6 crashed, 7 suspended
    sa.Column("power_state", sa.Integer, nullable=False, default=0),
    # The flavor as it was when the server was built (or last resized).
    sa.Column("flavor", sa.JSON, nullable=False),
    sa.Column("image_ref", sa.String(NAME), nullable=False, default=""),
    sa.Column("availability_zone", sa.String(NAME), nullable=True),
    sa.Column("key_name", sa.String(NAME), nullable=True),
    sa.Column("metadata", sa.JSON, nullable=False),
    # The server's tags (2.26), in the order they were added; NULL in rows older than the column.
    sa.Column("tags", sa.JSON, nullable=True),
    # The server's ports: ids, MACs, fixed IPs, and whether the compute service created them
    # (those alone are deleted with the server).
    sa.Column("network_info", sa.JSON, nullable=False),
    sa.Column("launched_at", sa.DateTime, nullable=True),
    sa.Column("terminated_at", sa.DateTime, nullable=True),
    sa.Column("deleted", sa.Boolean, nullable=False, default=False),
    # A copy of a server moving between cells that is not the server (yet, or any more): the
    # InstanceMapping names the cell whose copy is. Hidden copies are left out of every list.
    sa.Column("hidden", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    # A locked server refuses actions to all but admins; locked_by says who locked it ("owner":
    # its project, "admin": another), since the owner needs an override to lift an admin's lock.
    sa.Column("locked", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    sa.Column("locked_by", sa.String(16), nullable=True),
    # What the user says the server is (from 2.19), and the addresses they say reach it
    # (accessIPv4/accessIPv6: data only, nothing routes them).
    sa.Column("description", sa.String(NAME), nullable=True),
    sa.Column("access_ip_v4", sa.String(39), nullable=True),
    sa.Column("access_ip_v6", sa.String(39), nullable=True),
    # The id shared by the servers of one create request (``r-`` and 8 characters), by which a
    # list finds them together.
    sa.Column("reservation_id", sa.String(NAME), nullable=True),
    # When the server was soft-deleted (vm_state soft-delete): its host reclaims it once
    # reclaim_instance_interval has passed since; NULL otherwise.
    sa.Column("soft_deleted_at", sa.DateTime, nullable=True),
    # OS-DCF:diskConfig: AUTO (true) lets the guest grow its root partition to the disk;
    # MANUAL (false) leaves the image's layout.
    sa.Column(
        "auto_disk_config", sa.Boolean, nullable=False, default=False, server_default=sa.false()
    ),
    # "True" when the server has a config drive, "" otherwise (the API shows it as is).
    sa.Column("config_drive", sa.String(NAME), nullable=True),
    # The user data given at create (or rebuild from 2.57), base64 as given.
    sa.Column("user_data", sa.Text, nullable=True),
    # What the next spawn injects into the guest and the host then clears: the admin password
    # and personality files ({"admin_pass": ..., "files": [{"path", "contents"}]}).
    sa.Column("injected", sa.JSON, nullable=True),
    *timestamps(),
    **MYSQL,
)

instance_faults = sa.Table(
    "instance_faults",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, index=True),
    sa.Column("code", sa.Integer, nullable=False),
    sa.Column("message", sa.String(NAME), nullable=False),
    sa.Column("details", sa.Text, nullable=False),
    sa.Column("host", sa.String(NAME), nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # A NoValidHost's diagnosis (``objects.diagnosis.Diagnosis.to_json``), for admins.
    sa.Column("diagnosis", sa.JSON, nullable=True),
    **MYSQL,
)

pci_devices = sa.Table(
    "pci_devices",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "compute_node_id",
        sa.Integer,
        sa.ForeignKey("compute_nodes.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # "0000:81:00.1"
    sa.Column("address", sa.String(16), nullable=False),
    # type-PF, type-VF
    sa.Column("dev_type", sa.String(8), nullable=False),
    # A VF's PF address.
    sa.Column("parent_addr", sa.String(16), nullable=True),
    # A PF's network device name ("ens1f0").
    sa.Column("dev_name", sa.String(NAME), nullable=True),
    sa.Column("physical_network", sa.String(64), nullable=True),
    # available, claimed, allocated, unavailable
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("instance_uuid", sa.String(UUID), nullable=True, index=True),
    *timestamps(),
    sa.UniqueConstraint("compute_node_id", "address"),
    **MYSQL,
)

# What happened to an instance, request by request: an action per API request (create, delete,
# migrate...), events inside it (schedule, a build attempt on each host tried, and why it failed).
instance_actions = sa.Table(
    "instance_actions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, index=True),
    sa.Column("action", sa.String(NAME), nullable=False),
    sa.Column("request_id", sa.String(NAME), nullable=False),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("project_id", sa.String(NAME), nullable=False),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    sa.Column("message", sa.String(NAME), nullable=True),
    **MYSQL,
)

instance_action_events = sa.Table(
    "instance_action_events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "action_id",
        sa.Integer,
        sa.ForeignKey("instance_actions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("event", sa.String(NAME), nullable=False),
    sa.Column("start_time", sa.DateTime, nullable=False),
    sa.Column("finish_time", sa.DateTime, nullable=True),
    # Success, Error
    sa.Column("result", sa.String(NAME), nullable=True),
    sa.Column("host", sa.String(NAME), nullable=True),
    sa.Column("details", sa.Text, nullable=True),
    **MYSQL,
)

# Periodic work a compute host did over an audit period, one row per task, host and period: the
# usage audit ("instance_usage_audit") counts the servers the host ran in the period. RUNNING
# while under way, DONE after.
task_log = sa.Table(
    "task_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("task_name", sa.String(NAME), nullable=False),
    sa.Column("host", sa.String(NAME), nullable=False),
    sa.Column("period_beginning", sa.DateTime, nullable=False),
    sa.Column("period_ending", sa.DateTime, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("task_items", sa.Integer, nullable=False),
    sa.Column("errors", sa.Integer, nullable=False),
    sa.Column("message", sa.String(NAME), nullable=False),
    *timestamps(),
    sa.UniqueConstraint("task_name", "host", "period_beginning", "period_ending"),
    **MYSQL,
)

# A server on the move (cold migrate, resize, live migration, evacuation), one row per move. The
# row's uuid is also the Placement consumer that holds the source host's allocation while the
# move is in flight; the server's own consumer holds the destination's.
migrations = sa.Table(
    "migrations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, index=True),
    # migration, resize, live-migration, evacuation
    sa.Column("migration_type", sa.String(16), nullable=False),
    # pre-migrating, migrating, finished, confirming, confirmed, reverting, reverted, error, ...
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("source_compute", sa.String(NAME), nullable=True, index=True),
    sa.Column("source_node", sa.String(NAME), nullable=True),
    sa.Column("dest_compute", sa.String(NAME), nullable=True, index=True),
    sa.Column("dest_node", sa.String(NAME), nullable=True),
    sa.Column("dest_host", sa.String(NAME), nullable=True),
    # The flavors before and after (the same for a migration), as the instance holds them.
    sa.Column("old_flavor", sa.JSON, nullable=False),
    sa.Column("new_flavor", sa.JSON, nullable=False),
    # Port id -> request group -> provider on the source: where a revert binds the ports back.
    sa.Column("source_port_allocations", sa.JSON, nullable=False),
    sa.Column("project_id", sa.String(NAME), nullable=False),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    # A move between cells keeps a row in each; the source cell's is hidden once the server
    # runs in the target cell (and the target's, if the move is reverted).
    sa.Column(
        "cross_cell_move", sa.Boolean, nullable=False, default=False, server_default=sa.false()
    ),
    sa.Column("hidden", sa.Boolean, nullable=False, default=False, server_default=sa.false()),
    *timestamps(),
    **MYSQL,
)

# What the scheduler's cache of hosts holds changed (``berth.compute.db.host_changes``): a
# sequence advanced by each write transaction that changed some of it, and per number what.
host_change_sequence = sa.Table(
    "host_change_sequence",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.BigInteger, nullable=False),
    **MYSQL,
)

host_changes = sa.Table(
    "host_changes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("seq", sa.BigInteger, nullable=False, index=True),
    # "node": the compute node ``key`` (its row or its PCI devices); "service": the service
    # ``key`` (an operator's change; its nodes'); "faults": faults against a host were recorded
    # or removed; "everything": read it all again.
    sa.Column("scope", sa.String(16), nullable=False),
    sa.Column("key", sa.Integer, nullable=True),
    **MYSQL,
)

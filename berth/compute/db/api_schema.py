"""The compute API database's tables (SQLAlchemy Core): one database per deployment.

Alembic migrations under ``api_migrations/`` build exactly this schema; a test compares the two.
Uniqueness that must hold under concurrent writers is a constraint here, not a check in code:
one mapping per host and per instance, one BuildRequest and one RequestSpec per instance, one
flavor per flavor id and per name, one aggregate per name, a host at most once in an aggregate,
one admitted host per server of a group, one key pair per user and name, one quota limit per
project (or class, or user of a project) and resource, one quota lock per project or user.
"""

from __future__ import annotations

import sqlalchemy as sa

from berth.compute.db._tables import MYSQL, NAME, UUID, new_metadata, timestamps

metadata = new_metadata()

cell_mappings = sa.Table(
    "cell_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("name", sa.String(NAME), nullable=False, unique=True),
    sa.Column("database_url", sa.Text, nullable=False),
    sa.Column("transport_url", sa.Text, nullable=False),
    # A disabled cell keeps its servers but gets no new ones.
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    *timestamps(),
    **MYSQL,
)

host_mappings = sa.Table(
    "host_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("host", sa.String(NAME), nullable=False, unique=True),
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=False, index=True),
    **MYSQL,
)

instance_mappings = sa.Table(
    "instance_mappings",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, unique=True),
    # NULL while the server is a BuildRequest (no cell chosen yet).
    sa.Column("cell_id", sa.Integer, sa.ForeignKey("cell_mappings.id"), nullable=True, index=True),
    sa.Column("project_id", sa.String(NAME), nullable=False, index=True),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("queued_for_delete", sa.Boolean, nullable=False, default=False),
    *timestamps(),
    **MYSQL,
)

build_requests = sa.Table(
    "build_requests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("project_id", sa.String(NAME), nullable=False, index=True),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    # The server as requested, which the API shows until it has a cell.
    sa.Column("instance", sa.JSON, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    **MYSQL,
)

request_specs = sa.Table(
    "request_specs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("spec", sa.JSON, nullable=False),
    *timestamps(),
    **MYSQL,
)

flavors = sa.Table(
    "flavors",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    # The id clients see (a string: "1", "m1.small", a uuid).
    sa.Column("flavorid", sa.String(NAME), nullable=False, unique=True),
    sa.Column("name", sa.String(NAME), nullable=False, unique=True),
    sa.Column("vcpus", sa.Integer, nullable=False),
    sa.Column("memory_mb", sa.Integer, nullable=False),
    sa.Column("root_gb", sa.Integer, nullable=False, default=0),
    sa.Column("ephemeral_gb", sa.Integer, nullable=False, default=0),
    # MiB
    sa.Column("swap", sa.Integer, nullable=False, default=0),
    sa.Column("rxtx_factor", sa.Float, nullable=False, default=1.0),
    sa.Column("is_public", sa.Boolean, nullable=False, default=True),
    sa.Column("disabled", sa.Boolean, nullable=False, default=False),
    sa.Column("description", sa.Text, nullable=True),
    *timestamps(),
    **MYSQL,
)

flavor_extra_specs = sa.Table(
    "flavor_extra_specs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "flavor_id", sa.Integer, sa.ForeignKey("flavors.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("key", sa.String(NAME), nullable=False),
    sa.Column("value", sa.String(NAME), nullable=False),
    sa.UniqueConstraint("flavor_id", "key"),
    **MYSQL,
)

# Which projects may use a private flavor.
flavor_projects = sa.Table(
    "flavor_projects",
    metadata,
    sa.Column(
        "flavor_id", sa.Integer, sa.ForeignKey("flavors.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("project_id", sa.String(NAME), nullable=False),
    sa.PrimaryKeyConstraint("flavor_id", "project_id"),
    **MYSQL,
)

# The images the API knows (their scheduling metadata): Berth keeps no image service of its own.
images = sa.Table(
    "images",
    metadata,
    sa.Column("id", sa.String(UUID), primary_key=True),
    sa.Column("name", sa.String(NAME), nullable=False, default=""),
    # queued, saving, active, killed, deleted, deactivated
    sa.Column("status", sa.String(32), nullable=False, default="active"),
    # public, community, shared, private
    sa.Column("visibility", sa.String(32), nullable=False, default="public"),
    sa.Column("min_disk", sa.Integer, nullable=False, default=0),
    sa.Column("min_ram", sa.Integer, nullable=False, default=0),
    sa.Column("disk_format", sa.String(32), nullable=False, default="raw"),
    sa.Column("container_format", sa.String(32), nullable=False, default="bare"),
    sa.Column("size", sa.BigInteger, nullable=True),
    sa.Column("owner", sa.String(NAME), nullable=False, default="", index=True),
    # hw_architecture, img_hv_type, trait:* = required, ...
    sa.Column("properties", sa.JSON, nullable=False),
    *timestamps(),
    **MYSQL,
)

server_groups = sa.Table(
    "server_groups",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("name", sa.String(NAME), nullable=False),
    sa.Column("project_id", sa.String(NAME), nullable=False, index=True),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    # affinity, anti-affinity, soft-affinity, soft-anti-affinity
    sa.Column("policy", sa.String(32), nullable=False),
    # {"max_server_per_host": 2} (anti-affinity only)
    sa.Column("rules", sa.JSON, nullable=False),
    *timestamps(),
    **MYSQL,
)

server_group_members = sa.Table(
    "server_group_members",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "group_id",
        sa.Integer,
        sa.ForeignKey("server_groups.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, index=True),
    sa.UniqueConstraint("group_id", "instance_uuid"),
    **MYSQL,
)

# Which host each server of a group was admitted to (``group_placements``): the record a group's
# policy is checked against under the group's row lock, one row per server.
server_group_placements = sa.Table(
    "server_group_placements",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "group_id",
        sa.Integer,
        sa.ForeignKey("server_groups.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("host", sa.String(NAME), nullable=False),
    *timestamps(),
    sa.Index(None, "group_id", "host"),
    **MYSQL,
)

# Host aggregates; the uuid is also the Placement aggregate that mirrors the aggregate's hosts.
aggregates = sa.Table(
    "aggregates",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("uuid", sa.String(UUID), nullable=False, unique=True),
    sa.Column("name", sa.String(NAME), nullable=False, unique=True),
    *timestamps(),
    **MYSQL,
)

aggregate_hosts = sa.Table(
    "aggregate_hosts",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "aggregate_id",
        sa.Integer,
        sa.ForeignKey("aggregates.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("host", sa.String(NAME), nullable=False, index=True),
    sa.UniqueConstraint("aggregate_id", "host"),
    **MYSQL,
)

aggregate_metadata = sa.Table(
    "aggregate_metadata",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "aggregate_id",
        sa.Integer,
        sa.ForeignKey("aggregates.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("key", sa.String(NAME), nullable=False),
    sa.Column("value", sa.String(NAME), nullable=False),
    sa.UniqueConstraint("aggregate_id", "key"),
    **MYSQL,
)

# How many times the aggregates (their hosts, metadata, names) were written: the scheduler reads
# them again only when this moved (``berth.compute.db.aggregates``). One row, id 1.
aggregate_change_count = sa.Table(
    "aggregate_change_count",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("value", sa.BigInteger, nullable=False),
    **MYSQL,
)

# Users' key pairs (os-keypairs): a user's, not a project's, as upstream keeps them. A server
# records the name it was booted with; deleting the key pair leaves that record alone.
key_pairs = sa.Table(
    "key_pairs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("name", sa.String(NAME), nullable=False),
    # ssh or x509
    sa.Column("type", sa.String(8), nullable=False),
    sa.Column("fingerprint", sa.String(NAME), nullable=False),
    # An OpenSSH public key line, or a PEM certificate for x509.
    sa.Column("public_key", sa.Text, nullable=False),
    *timestamps(),
    sa.UniqueConstraint("user_id", "name"),
    **MYSQL,
)

# Quota limits an operator set for a project (os-quota-sets), one row per resource; a resource
# without a row takes the default class's limit, else Berth's default (``berth.compute.quotas``).
quotas = sa.Table(
    "quotas",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", sa.String(NAME), nullable=False),
    sa.Column("resource", sa.String(NAME), nullable=False),
    # -1: unlimited
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *timestamps(),
    sa.UniqueConstraint("project_id", "resource"),
    **MYSQL,
)

# Limits an operator set for one user of a project (os-quota-sets with user_id), one row per
# resource; a resource without a row takes the project's limit. The users' limits of a project
# never add up to more than its own (``berth.compute.user_quotas``).
project_user_quotas = sa.Table(
    "project_user_quotas",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", sa.String(NAME), nullable=False),
    sa.Column("user_id", sa.String(NAME), nullable=False),
    sa.Column("resource", sa.String(NAME), nullable=False),
    # -1: unlimited
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *timestamps(),
    sa.UniqueConstraint("project_id", "user_id", "resource"),
    **MYSQL,
)

# Limits of quota classes (os-quota-class-sets); only the "default" class is read: its limits
# are every project's defaults.
quota_classes = sa.Table(
    "quota_classes",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_name", sa.String(NAME), nullable=False),
    sa.Column("resource", sa.String(NAME), nullable=False),
    sa.Column("hard_limit", sa.Integer, nullable=False),
    *timestamps(),
    sa.UniqueConstraint("class_name", "resource"),
    **MYSQL,
)

# One row per project (kind "project") and per user (kind "user", for key pairs), locked by the
# transaction that counts what it owns and adds to it (``berth.common.lock_rows``), so that two
# creates never both pass a quota.
quota_locks = sa.Table(
    "quota_locks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(NAME), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    sa.UniqueConstraint("kind", "owner"),
    **MYSQL,
)

# Servers waiting for room instead of going to ERROR (``berth.compute.conductor.queue``): one row
# per queued server, beside its BuildRequest, which stays until it is built or given up.
build_queue = sa.Table(
    "build_queue",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("instance_uuid", sa.String(UUID), nullable=False, unique=True),
    # When the server was first found not to fit, and when it is given up.
    sa.Column("queued_at", sa.DateTime, nullable=False),
    sa.Column("expires_at", sa.DateTime, nullable=False, index=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    # Set while a conductor tries it again (a compare-and-set: one conductor at a time).
    sa.Column("retrying_since", sa.DateTime, nullable=True),
    # The last NoValidHost: its message and the scheduler's diagnosis.
    sa.Column("message", sa.Text, nullable=False),
    sa.Column("diagnosis", sa.JSON, nullable=True),
    **MYSQL,
)

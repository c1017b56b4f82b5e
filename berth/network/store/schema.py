"""The network database's tables (SQLAlchemy Core).

Alembic migrations under ``migrations/`` build exactly this schema; a test compares the two.
Uniqueness that must hold under concurrent writers is a constraint here, not a check in code:
one segment per (type, physical network, segmentation id), one MAC address per network, one
allocation per (subnet, address), one agent of a kind per host, one quota limit per (project,
resource), one quota lock per project.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
    }
)

_MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}
_ID = 36


def _standard() -> list[sa.Column[object]]:
    """What every API resource carries: timestamps and the revision number clients see."""
    return [
        sa.Column("revision_number", sa.Integer, nullable=False, default=0),
        sa.Column("created_at", sa.DateTime, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=True),
    ]


def _described() -> list[sa.Column[object]]:
    return [
        sa.Column("name", sa.String(255), nullable=False, default=""),
        sa.Column("description", sa.String(255), nullable=False, default=""),
    ]


qos_policies = sa.Table(
    "qos_policies",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    # Sharing is in rbac_policies (a wildcard entry is ``shared: true``).
    sa.Column("is_default", sa.Boolean, nullable=False, default=False),
    *_standard(),
    **_MYSQL,
)

qos_rules = sa.Table(
    "qos_rules",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column(
        "policy_id",
        sa.String(_ID),
        sa.ForeignKey("qos_policies.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    # bandwidth_limit, minimum_bandwidth, minimum_packet_rate
    sa.Column("rule_type", sa.String(32), nullable=False),
    sa.Column("direction", sa.String(16), nullable=False),
    sa.Column("max_kbps", sa.BigInteger, nullable=True),
    sa.Column("max_burst_kbps", sa.BigInteger, nullable=True),
    sa.Column("min_kbps", sa.BigInteger, nullable=True),
    sa.Column("min_kpps", sa.BigInteger, nullable=True),
    sa.UniqueConstraint("policy_id", "rule_type", "direction"),
    **_MYSQL,
)

networks = sa.Table(
    "networks",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("status", sa.String(16), nullable=False),
    # Sharing is in rbac_policies (a wildcard access_as_shared entry is ``shared: true``, a
    # wildcard access_as_external one ``router:external: true``).
    sa.Column("mtu", sa.Integer, nullable=False),
    sa.Column("qos_policy_id", sa.String(_ID), sa.ForeignKey("qos_policies.id"), nullable=True),
    # What its new ports' port_security_enabled is unless they say (the port-security extension).
    sa.Column(
        "port_security_enabled", sa.Boolean, nullable=False, default=True, server_default=sa.true()
    ),
    *_standard(),
    **_MYSQL,
)

segments = sa.Table(
    "segments",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column(
        "network_id",
        sa.String(_ID),
        sa.ForeignKey("networks.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    *_described(),
    sa.Column("network_type", sa.String(32), nullable=False),
    sa.Column("physical_network", sa.String(64), nullable=True),
    sa.Column("segmentation_id", sa.Integer, nullable=True),
    # Creation order within the network: the first segment is the one provider:* shows.
    sa.Column("segment_index", sa.Integer, nullable=False),
    # "type:physnet:id": unique, so two networks can never take one VLAN (NULLs would not clash).
    sa.Column("allocation_key", sa.String(128), nullable=False, unique=True),
    *_standard(),
    **_MYSQL,
)

subnets = sa.Table(
    "subnets",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column(
        "network_id",
        sa.String(_ID),
        sa.ForeignKey("networks.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("segment_id", sa.String(_ID), sa.ForeignKey("segments.id"), nullable=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    sa.Column("ip_version", sa.Integer, nullable=False),
    sa.Column("cidr", sa.String(64), nullable=False),
    sa.Column("gateway_ip", sa.String(64), nullable=True),
    sa.Column("allocation_pools", sa.JSON, nullable=False),
    sa.Column("dns_nameservers", sa.JSON, nullable=False),
    sa.Column("host_routes", sa.JSON, nullable=False),
    sa.Column("enable_dhcp", sa.Boolean, nullable=False, default=True),
    sa.Column("ipv6_ra_mode", sa.String(16), nullable=True),
    sa.Column("ipv6_address_mode", sa.String(16), nullable=True),
    *_standard(),
    **_MYSQL,
)

ports = sa.Table(
    "ports",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("network_id", sa.String(_ID), sa.ForeignKey("networks.id"), nullable=False),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    sa.Column("mac_address", sa.String(32), nullable=False),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("device_id", sa.String(255), nullable=False, default="", index=True),
    sa.Column("device_owner", sa.String(255), nullable=False, default=""),
    sa.Column("qos_policy_id", sa.String(_ID), sa.ForeignKey("qos_policies.id"), nullable=True),
    # immediate, deferred or none (routed networks defer the address until the host is known)
    sa.Column("ip_allocation", sa.String(16), nullable=False),
    # The active binding; inactive ones (another host, during a move) are in port_bindings.
    sa.Column("binding_host", sa.String(255), nullable=False, default="", index=True),
    sa.Column("binding_vnic_type", sa.String(32), nullable=False, default="normal"),
    sa.Column("binding_profile", sa.JSON, nullable=False),
    sa.Column("binding_vif_type", sa.String(32), nullable=False, default="unbound"),
    sa.Column("binding_vif_details", sa.JSON, nullable=False),
    # Whether security groups apply to the port (the port-security extension).
    sa.Column(
        "port_security_enabled", sa.Boolean, nullable=False, default=True, server_default=sa.true()
    ),
    *_standard(),
    sa.UniqueConstraint("network_id", "mac_address"),
    **_MYSQL,
)

ip_allocations = sa.Table(
    "ip_allocations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column(
        "port_id",
        sa.String(_ID),
        sa.ForeignKey("ports.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("subnet_id", sa.String(_ID), sa.ForeignKey("subnets.id"), nullable=False),
    sa.Column("network_id", sa.String(_ID), nullable=False, index=True),
    sa.Column("ip_address", sa.String(64), nullable=False),
    # The address minus the subnet's network address, for finding the lowest free one in SQL;
    # null beyond what a BIGINT holds (``ipam.OFFSET_LIMIT``).
    sa.Column("ip_offset", sa.BigInteger, nullable=True),
    sa.UniqueConstraint("subnet_id", "ip_address"),
    sa.Index(None, "subnet_id", "ip_offset"),
    **_MYSQL,
)

port_bindings = sa.Table(
    "port_bindings",
    metadata,
    sa.Column(
        "port_id", sa.String(_ID), sa.ForeignKey("ports.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("vnic_type", sa.String(32), nullable=False),
    sa.Column("profile", sa.JSON, nullable=False),
    sa.Column("vif_type", sa.String(32), nullable=False),
    sa.Column("vif_details", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.PrimaryKeyConstraint("port_id", "host"),
    **_MYSQL,
)

agents = sa.Table(
    "agents",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("agent_type", sa.String(64), nullable=False),
    sa.Column("binary", sa.String(255), nullable=False),
    sa.Column("topic", sa.String(255), nullable=False),
    sa.Column("host", sa.String(255), nullable=False, index=True),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("availability_zone", sa.String(255), nullable=True),
    sa.Column("configurations", sa.JSON, nullable=False),
    # Whether the agent's providers are in Placement as its configuration says (None: never
    # tried, e.g. no Placement configured).
    sa.Column("resources_synced", sa.Boolean, nullable=True),
    sa.Column("started_at", sa.DateTime, nullable=False),
    sa.Column("heartbeat_at", sa.DateTime, nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=True),
    sa.UniqueConstraint("agent_type", "host"),
    **_MYSQL,
)

# Who else may use an object (/v2.0/rbac-policies): the object's owner (or an admin) grants
# ``action`` on it to ``target_project``, one project or every one (``*``). The key makes a
# second identical grant a conflict.
rbac_policies = sa.Table(
    "rbac_policies",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    # network or qos_policy
    sa.Column("object_type", sa.String(32), nullable=False),
    sa.Column("object_id", sa.String(_ID), nullable=False, index=True),
    # access_as_shared, or access_as_external (networks)
    sa.Column("action", sa.String(32), nullable=False),
    sa.Column("target_project", sa.String(255), nullable=False),
    sa.UniqueConstraint("object_type", "object_id", "action", "target_project"),
    **_MYSQL,
)

# Quota limits an operator set for a project (/v2.0/quotas), one row per resource; a resource
# without a row takes the default from the settings (``quota_network`` and friends).
network_quotas = sa.Table(
    "network_quotas",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", sa.String(255), nullable=False),
    sa.Column("resource", sa.String(255), nullable=False),
    # -1: unlimited
    sa.Column("hard_limit", sa.Integer, nullable=False),
    sa.UniqueConstraint("project_id", "resource"),
    **_MYSQL,
)

# One row per project, locked by the transaction that adds a network, subnet or port and then
# counts the project's (``berth.common.lock_rows``), so two creates never both pass a quota.
network_quota_locks = sa.Table(
    "network_quota_locks",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("project_id", sa.String(255), nullable=False, unique=True),
    sa.Column("generation", sa.Integer, nullable=False),
    **_MYSQL,
)

# What the Placement reporter last made each provider show (a fingerprint of the provider as it
# wanted it) and the provider's generation right after. A provider whose generation has not
# moved since shows the same, so a restarted reporter need not read it again.
placement_synced = sa.Table(
    "placement_synced",
    metadata,
    sa.Column("provider_uuid", sa.String(_ID), primary_key=True),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("generation", sa.Integer, nullable=False),
    **_MYSQL,
)

security_groups = sa.Table(
    "security_groups",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    sa.Column("stateful", sa.Boolean, nullable=False, default=True),
    *_standard(),
    **_MYSQL,
)

# Each project's ``default`` group: the primary key makes the first one made the only one,
# however many requests race to make it.
default_security_groups = sa.Table(
    "default_security_groups",
    metadata,
    sa.Column("project_id", sa.String(255), primary_key=True),
    sa.Column(
        "security_group_id",
        sa.String(_ID),
        sa.ForeignKey("security_groups.id", ondelete="CASCADE"),
        nullable=False,
    ),
    **_MYSQL,
)

security_group_rules = sa.Table(
    "security_group_rules",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column(
        "security_group_id",
        sa.String(_ID),
        sa.ForeignKey("security_groups.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    # ingress or egress
    sa.Column("direction", sa.String(16), nullable=False),
    # IPv4 or IPv6
    sa.Column("ethertype", sa.String(8), nullable=False),
    # A name ("tcp") or a number ("17") as the rule was given; null: any protocol.
    sa.Column("protocol", sa.String(40), nullable=True),
    sa.Column("port_range_min", sa.Integer, nullable=True),
    sa.Column("port_range_max", sa.Integer, nullable=True),
    sa.Column("remote_ip_prefix", sa.String(64), nullable=True),
    # A rule naming a group goes with that group, as upstream's.
    sa.Column(
        "remote_group_id",
        sa.String(_ID),
        sa.ForeignKey("security_groups.id", ondelete="CASCADE"),
        nullable=True,
        index=True,
    ),
    # What the rule matches, canonically (``security_group_rules.fingerprint``): the key makes
    # a second rule matching the same traffic in a group a conflict, even between racing writers.
    sa.Column("fingerprint", sa.String(64), nullable=False),
    *_standard(),
    sa.UniqueConstraint("security_group_id", "fingerprint"),
    **_MYSQL,
)

# The security groups of each port. Deleting a port drops its rows; a group still named here
# cannot be deleted (the key refuses it, and the API says 409 first).
port_security_groups = sa.Table(
    "port_security_groups",
    metadata,
    sa.Column(
        "port_id", sa.String(_ID), sa.ForeignKey("ports.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "security_group_id",
        sa.String(_ID),
        sa.ForeignKey("security_groups.id"),
        nullable=False,
        index=True,
    ),
    sa.PrimaryKeyConstraint("port_id", "security_group_id"),
    **_MYSQL,
)

# Routers (/v2.0/routers). The gateway and the interfaces are ports whose device_id is the
# router's id (device_owner network:router_gateway, network:router_interface); the row holds
# what no port says: the external network, SNAT and the extra routes.
routers = sa.Table(
    "routers",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    *_described(),
    sa.Column("admin_state_up", sa.Boolean, nullable=False, default=True),
    sa.Column("status", sa.String(16), nullable=False),
    # The external network of the gateway (NULL: no gateway).
    sa.Column("gw_network_id", sa.String(_ID), nullable=True, index=True),
    sa.Column("enable_snat", sa.Boolean, nullable=False, default=True),
    # [{"destination": cidr, "nexthop": ip}] (the extraroute extension)
    sa.Column("routes", sa.JSON, nullable=False),
    *_standard(),
    **_MYSQL,
)

# Floating IPs (/v2.0/floatingips). The address is held by a port of the external network
# (device_owner network:floatingip, no project), so the subnet's IPAM hands it out.
floatingips = sa.Table(
    "floatingips",
    metadata,
    sa.Column("id", sa.String(_ID), primary_key=True),
    sa.Column("project_id", sa.String(255), nullable=False, index=True),
    sa.Column("description", sa.String(255), nullable=False, default=""),
    sa.Column("floating_network_id", sa.String(_ID), nullable=False, index=True),
    sa.Column("floating_port_id", sa.String(_ID), sa.ForeignKey("ports.id"), nullable=False),
    sa.Column("floating_ip_address", sa.String(64), nullable=False),
    # The association: a port, one of its fixed addresses and the router between them.
    sa.Column("port_id", sa.String(_ID), nullable=True, index=True),
    sa.Column("fixed_ip_address", sa.String(64), nullable=True),
    sa.Column("router_id", sa.String(_ID), nullable=True, index=True),
    sa.Column("status", sa.String(16), nullable=False),
    *_standard(),
    **_MYSQL,
)

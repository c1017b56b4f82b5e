"""Ports: creation with MAC and IP addresses, updates, deletion, and the API's view.

A port's addresses follow its ``ip_allocation``: ``immediate`` takes one address per IP version
from the network's subnets at creation (or the ``fixed_ips`` asked for), ``deferred`` waits for
the binding to say which segment's subnet (a routed network), ``none`` takes none. Its
``resource_request`` is computed, never stored: from the minimum rules of its QoS policy (else its
network's), its VNIC type and the physical networks of its network's segments. Binding lives in
``bindings``.
"""

from __future__ import annotations

import functools
import ipaddress
import random
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from berth.common.context import RequestContext
from berth.common.timeutils import utcnow
from berth.config import NetworkSettings
from berth.network import (
    exceptions,
    ipam,
    networks,
    policy,
    security_groups,
    subnets,
    validate,
)
from berth.network.model import FixedIp, QosRule, ResourceRequest, Segment, Subnet, qos_rule
from berth.network.resource_request import resource_request, rules_in_effect
from berth.network.store import networks as network_store
from berth.network.store import ports as store
from berth.network.store import qos as qos_store
from berth.network.store import routers as router_store
from berth.network.store import security_groups as group_store
from berth.network.store import subnets as subnet_store
from berth.network.store.remembered import remembered
from berth.network.store.schema import ports as port_table

VNIC_TYPES = (
    "normal", "direct", "macvtap", "direct-physical", "baremetal", "virtio-forwarder", "vdpa",
    "remote-managed",
)  # fmt: skip
BINDING = ("binding:host_id", "binding:profile", "binding:vnic_type")
_CREATE = {
    "network_id", "name", "description", "admin_state_up", "mac_address", "fixed_ips",
    "device_id", "device_owner", "project_id", "tenant_id", "qos_policy_id", "security_groups",
    "port_security_enabled", *BINDING,
}  # fmt: skip
_UPDATE = {
    "name", "description", "admin_state_up", "device_id", "device_owner", "qos_policy_id",
    "fixed_ips", "security_groups", "port_security_enabled", "mac_address", *BINDING,
}  # fmt: skip
_OPERATOR_ONLY = ("binding:host_id", "binding:profile")
# String attributes upstream limits to 255 characters.
STRINGS = ("name", "description", "device_id", "device_owner")
_MAC = re.compile(r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$")
_MAC_TRIES = 16


@dataclass(frozen=True)
class NetworkLayout:
    """What a port's addressing and binding read of its network."""

    segments: tuple[Segment, ...]
    subnets: tuple[Subnet, ...]

    @property
    def routed(self) -> bool:
        return any(s.segment_id is not None for s in self.subnets)

    @property
    def physical_networks(self) -> tuple[str | None, ...]:
        return tuple(s.physical_network for s in self.segments)


# Remembered as the reads it is made of: a port request works it out three times (its read
# ahead, its write and its answer), and a subnet's model parses its pools each time.
@remembered
def layout_of(conn: Connection, network_id: str) -> NetworkLayout:
    rows = network_store.segments_of(conn, [network_id]).get(network_id, [])
    segments = tuple(
        Segment(
            r["id"], r["network_id"], r["network_type"], r["physical_network"], r["segmentation_id"]
        )
        for r in rows
    )
    return NetworkLayout(
        segments, tuple(subnets.subnet_of(r) for r in subnet_store.of_networks(conn, [network_id]))
    )


@dataclass(frozen=True, slots=True)
class Written:
    """A port as its create wrote it, known without reading it back: its row (with the values
    the table gives what the create does not say), its addresses in the order they were taken
    (the order a read gives them in), and its security groups as a read gives them (None when
    the database did not say which default group it joined)."""

    row: Mapping[str, Any]
    fixed_ips: tuple[FixedIp, ...]
    groups: tuple[str, ...] | None


# What a new port's row holds where its create says nothing: the columns' own defaults (each
# a plain value; every other column the create says).
_COLUMN_DEFAULTS = {
    column.name: column.default.arg  # type: ignore[attr-defined]
    if column.default is not None and column.default.is_scalar
    else None
    for column in port_table.columns
}


# -- creation -----------------------------------------------------------------------------------


def create_port(
    conn: Connection, context: RequestContext, settings: NetworkSettings, body: Mapping[str, Any]
) -> Written:
    validate.known(body, _CREATE, "port")
    validate.strings(body, STRINGS)
    policy.check_attributes(context, body, _OPERATOR_ONLY)
    network_id = validate.uuid_value("network_id", body.get("network_id"))
    network = networks.get_visible(conn, context, network_id)
    _check_mac_right(context, network["project_id"], body)
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "creating a port for another project")
    # On a network shared with the caller's project, anyone who sees it may make ports.
    if not networks.is_shared_with(conn, context, network_id):
        policy.require_member(context, network["project_id"], f"creating a port on {network_id}")
    vnic_type = validate.one_of(body, "binding:vnic_type", VNIC_TYPES, "normal")
    layout = layout_of(conn, network_id)
    fixed = body.get("fixed_ips")
    allocation = (
        "none" if fixed == [] else ("deferred" if fixed is None and layout.routed else "immediate")
    )
    port_id = str(uuid.uuid4())
    # A port takes its network's port security unless it says.
    port_security = validate.boolean(
        body, "port_security_enabled", bool(network["port_security_enabled"])
    )
    values = {
        "id": port_id,
        "network_id": network_id,
        "project_id": project,
        "name": validate.string(body, "name", ""),
        "description": validate.string(body, "description", ""),
        "admin_state_up": validate.boolean(body, "admin_state_up", True),
        "status": "DOWN",
        "device_id": validate.string(body, "device_id", ""),
        "device_owner": validate.string(body, "device_owner", ""),
        "qos_policy_id": networks.qos_policy_of(conn, context, body),
        "ip_allocation": allocation,
        "binding_vnic_type": vnic_type,
        "binding_profile": {},
        "binding_vif_details": {},
        "port_security_enabled": port_security,
        "revision_number": 0,
        "created_at": utcnow(),
    }
    mac = _insert_with_mac(conn, values, body.get("mac_address"), settings.base_mac)
    groups = security_groups.join_groups(
        conn, context, port_id, project, body.get("security_groups"), port_security,
        values["device_owner"],
    )  # fmt: skip
    taken: list[FixedIp] = []
    if fixed:
        taken = assign_addresses(
            conn, port_id, network_id, layout.subnets, requested_ips(fixed), mac
        )
    elif allocation == "immediate":
        taken = _assign_defaults(conn, port_id, network_id, layout.subnets, mac)
    return Written(
        {**_COLUMN_DEFAULTS, **values, "mac_address": mac},
        tuple(taken),
        None if groups is None else tuple(groups),
    )


def create_device_port(
    conn: Connection,
    settings: NetworkSettings,
    network_id: str,
    project_id: str,
    device: tuple[str, str],
    wanted: Sequence[tuple[str | None, str | None]] | None,
) -> str:
    """A port the service makes for a device of its own, ``(device_id, device_owner)``: a
    router's gateway or interface, a floating IP's address. The caller has judged the request;
    the port takes the addresses ``wanted`` (None: the defaults of any port). The simulated L3
    agent plugs it at once, so it is ``ACTIVE``."""
    port_id = str(uuid.uuid4())
    values = {
        "id": port_id,
        "network_id": network_id,
        "project_id": project_id,
        "name": "",
        "description": "",
        "admin_state_up": True,
        "status": "ACTIVE",
        "device_id": device[0],
        "device_owner": device[1],
        "qos_policy_id": None,
        "ip_allocation": "immediate",
        "binding_vnic_type": "normal",
        "binding_profile": {},
        "binding_vif_details": {},
    }
    mac = _insert_with_mac(conn, values, None, settings.base_mac)
    available = layout_of(conn, network_id).subnets
    if wanted is None:
        _assign_defaults(conn, port_id, network_id, available, mac)
    else:
        assign_addresses(conn, port_id, network_id, available, wanted, mac)
    return port_id


def _check_mac_right(context: RequestContext, network_owner: str, body: Mapping[str, Any]) -> None:
    """Choosing a port's MAC address takes a member of the network's project, or an admin
    (upstream's network_owner rule), whoever owns the port."""
    if "mac_address" in body:
        policy.require_member(context, network_owner, "setting mac_address")


def _unicast_mac(asked: Any) -> str:
    mac = str(asked).lower()
    if not _MAC.match(mac) or int(mac[:2], 16) & 1:
        raise exceptions.InvalidInput(
            f"Invalid input for mac_address. Reason: '{asked}' is not a valid unicast MAC address."
        )
    return mac


def _mac_in_use(network_id: str, mac: str) -> exceptions.MacAddressInUse:
    return exceptions.MacAddressInUse(
        f"Unable to complete operation for network {network_id}. The mac address {mac} is in use."
    )


def _insert_with_mac(conn: Connection, values: dict[str, Any], asked: Any, base_mac: str) -> str:
    """Insert the port with the MAC address asked for, else a free one; returns the MAC."""
    if asked is not None:
        mac = _unicast_mac(asked)
        if not store.insert(conn, {**values, "mac_address": mac}):
            raise _mac_in_use(values["network_id"], mac)
        return mac
    prefix = base_mac.lower().split(":")[:3]
    for _ in range(_MAC_TRIES):
        mac = ":".join(prefix + [f"{random.randrange(256):02x}" for _ in range(3)])
        if store.insert(conn, {**values, "mac_address": mac}):
            return mac
    raise exceptions.MacAddressInUse(
        f"No free MAC address found on network {values['network_id']}."
    )


def requested_ips(fixed: Any) -> list[tuple[str | None, str | None]]:
    if not isinstance(fixed, list) or not all(isinstance(f, dict) for f in fixed):
        raise exceptions.InvalidInput(
            "Invalid input for fixed_ips. Reason: a list of objects is expected."
        )
    found = []
    for entry in fixed:
        validate.known(entry, {"subnet_id", "ip_address"}, "fixed_ips")
        subnet_id = validate.uuid_or_none(entry, "subnet_id")
        address = entry.get("ip_address")
        if subnet_id is None and address is None:
            raise exceptions.InvalidInput(
                "Invalid input for fixed_ips. Reason: each entry needs a subnet_id or an ip_address."
            )
        found.append((subnet_id, None if address is None else str(address)))
    return found


def assign_addresses(
    conn: Connection,
    port_id: str,
    network_id: str,
    available: Sequence[Subnet],
    wanted: Sequence[tuple[str | None, str | None]],
    mac: str,
) -> list[FixedIp]:
    """Take the asked-for addresses: a specific one, or the lowest free one of a subnet (the
    EUI-64 one of an auto-addressed subnet); returns them in the order taken."""
    by_id = {s.id: s for s in available}
    taken = []
    for subnet_id, address in wanted:
        subnet = by_id.get(subnet_id) if subnet_id else _subnet_holding(available, address)
        if subnet is None:
            raise exceptions.InvalidInput(
                f"Invalid input for operation: Failed to create port on network {network_id}, "
                f"because fixed_ips included invalid subnet {subnet_id or address}."
            )
        if address is None and subnet.auto_address:
            address = ipam.eui64_address(subnet.cidr, mac)
        elif address is None:
            taken.append(FixedIp(subnet.id, take_lowest(conn, port_id, subnet)))
            continue
        chosen = ipam.allocate_specific(
            subnet, address, subnet_store.used_addresses(conn, subnet.id)
        )
        offset = ipam.address_offset(subnet, chosen)
        if not store.take_address(conn, port_id, network_id, subnet.id, chosen, offset):
            raise exceptions.IpAddressInUse(
                f"Unable to complete operation for network {network_id}. The IP address {chosen} is in use."
            )
        taken.append(FixedIp(subnet.id, chosen))
    return taken


def _subnet_holding(available: Sequence[Subnet], address: str | None) -> Subnet | None:
    try:
        parsed = ipaddress.ip_address(address or "")
    except ValueError:
        raise exceptions.InvalidInput(
            f"Invalid input for fixed_ips. Reason: '{address}' is not a valid IP address."
        ) from None
    return next((s for s in available if parsed in ipaddress.ip_network(s.cidr)), None)


def take_lowest(conn: Connection, port_id: str, subnet: Subnet) -> str:
    """The lowest free address of the subnet, taken; retried when a racing port took it first.
    A retry reads every used address: a row without its offset (written by a process older
    than migration 0007, during an upgrade) would have the search choose its address again."""
    for attempt in range(8):
        address = _lowest_free(conn, subnet, search=attempt == 0)
        offset = ipam.address_offset(subnet, address)
        if store.take_address(conn, port_id, subnet.network_id, subnet.id, address, offset):
            return address
    raise exceptions.IpAddressGenerationFailure(
        f"No more IP addresses available on subnet {subnet.id}."
    )


def _lowest_free(conn: Connection, subnet: Subnet, search: bool) -> str:
    """The subnet's lowest free address: found in SQL (``search``), else (or when it may lie
    beyond the offsets the store keeps) from every used address."""
    if search:
        lowest_unused = functools.partial(subnet_store.lowest_unused, conn, subnet.id)
        found = ipam.allocate_lowest_by_search(subnet, lowest_unused)
        if found is not None:
            return found
    return ipam.allocate_lowest(subnet, subnet_store.used_addresses(conn, subnet.id))


def _assign_defaults(
    conn: Connection, port_id: str, network_id: str, available: Sequence[Subnet], mac: str
) -> list[FixedIp]:
    """The EUI-64 address of every auto-addressed subnet (hosts configure them all, as
    upstream assigns them) and one address per IP version from the first other subnet of that
    version with one free; returns them in the order taken."""
    auto = [s for s in available if s.auto_address]
    taken = []
    if auto:
        taken += assign_addresses(
            conn, port_id, network_id, auto, [(s.id, None) for s in auto], mac
        )
    handed_out = [s for s in available if not s.auto_address]
    for version in sorted({s.ip_version for s in handed_out}):
        last_error: Exception | None = None
        for subnet in (s for s in handed_out if s.ip_version == version):
            try:
                taken.append(FixedIp(subnet.id, take_lowest(conn, port_id, subnet)))
                break
            except exceptions.IpAddressGenerationFailure as exc:
                last_error = exc
        else:
            if last_error is not None:
                raise exceptions.IpAddressGenerationFailure(
                    f"No more IP addresses available on network {network_id}."
                )
    return taken


# -- reading ------------------------------------------------------------------------------------


def get_visible(
    conn: Connection, context: RequestContext, port_id: str, locked: bool = False
) -> Mapping[str, Any]:
    """The port if the caller sees it, else 404; ``locked``: locked against other writers
    until the transaction ends (``store.get_for_update``)."""
    found = store.get_for_update(conn, port_id) if locked else store.get(conn, port_id)
    if found is None:
        raise exceptions.PortNotFound(port_id)
    if policy.is_privileged(context):
        # Admins and services see every port, whoever owns its network.
        return found
    # Its project and the network's owner see a port; others on a shared network do not.
    network = network_store.get_network(conn, found["network_id"])
    owners = {found["project_id"], network["project_id"] if network else ""}
    if not any(policy.can_see(context, owner) for owner in owners):
        raise exceptions.PortNotFound(port_id)
    return found


def resource_requests(
    conn: Connection, rows: Sequence[Mapping[str, Any]]
) -> dict[str, ResourceRequest | None]:
    """Each port's resource request, reading policies, rules and segments in bulk."""
    if not rows:
        return {}
    network_ids = {r["network_id"] for r in rows}
    network_rows = network_store.list_networks(conn, None, network_ids) if network_ids else []
    network_policy = {n["id"]: n["qos_policy_id"] for n in network_rows}
    segments = network_store.segments_of(conn, network_ids)
    policy_ids = {r["qos_policy_id"] for r in rows} | set(network_policy.values())
    policy_ids.discard(None)
    rules = {
        pid: [_rule(r) for r in found]
        for pid, found in qos_store.rules_of_policies(conn, policy_ids).items()
    }
    return {
        row["id"]: request_of(
            row, network_policy.get(row["network_id"]), rules, segments.get(row["network_id"], [])
        )
        for row in rows
    }


def request_of(
    row: Mapping[str, Any],
    network_policy_id: str | None,
    rules: Mapping[str, list[QosRule]],
    segments: Sequence[Mapping[str, Any]],
) -> ResourceRequest | None:
    own = row["qos_policy_id"]
    effective = rules_in_effect(
        rules.get(own, []) if own else None,
        rules.get(network_policy_id, []) if network_policy_id else None,
    )
    return resource_request(
        row["id"], row["binding_vnic_type"], effective, [s["physical_network"] for s in segments]
    )


def _rule(row: Mapping[str, Any]) -> QosRule:
    return qos_rule(
        row["rule_type"],
        row["direction"],
        row["min_kbps"],
        row["min_kpps"],
        row["max_kbps"],
        row["max_burst_kbps"],
    )


def fixed_ips(conn: Connection, port_id: str) -> tuple[FixedIp, ...]:
    return tuple(
        FixedIp(f["subnet_id"], f["ip_address"])
        for f in store.fixed_ips_of(conn, [port_id]).get(port_id, [])
    )


def views(
    conn: Connection, context: RequestContext, rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    ids = [r["id"] for r in rows]
    return views_of(
        conn, context, rows, store.fixed_ips_of(conn, ids), group_store.groups_of_ports(conn, ids)
    )


def views_of(
    conn: Connection,
    context: RequestContext,
    rows: Sequence[Mapping[str, Any]],
    addresses: Mapping[str, list[dict[str, str]]],
    groups: Mapping[str, list[str]],
) -> list[dict[str, Any]]:
    """The views of ports whose addresses (``fixed_ips_of``'s form) and groups are known."""
    requests = resource_requests(conn, rows)
    network_rows = (
        network_store.list_networks(conn, None, {r["network_id"] for r in rows}) if rows else []
    )
    network_policy = {n["id"]: n["qos_policy_id"] for n in network_rows}
    return [
        policy.visible(
            context,
            _view(
                row,
                addresses.get(row["id"], []),
                requests[row["id"]],
                network_policy.get(row["network_id"]),
                groups.get(row["id"], []),
            ),
        )
        for row in rows
    ]


def _view(
    row: Mapping[str, Any],
    addresses: list[dict[str, str]],
    request: ResourceRequest | None,
    network_policy: str | None,
    groups: list[str],
) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "network_id": row["network_id"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "mac_address": row["mac_address"],
        "admin_state_up": row["admin_state_up"],
        "status": row["status"],
        "device_id": row["device_id"],
        "device_owner": row["device_owner"],
        "fixed_ips": addresses,
        "qos_policy_id": row["qos_policy_id"],
        "qos_network_policy_id": network_policy,
        "ip_allocation": row["ip_allocation"],
        "resource_request": request.as_dict() if request is not None else None,
        "binding:host_id": row["binding_host"],
        "binding:vnic_type": row["binding_vnic_type"],
        "binding:profile": row["binding_profile"],
        "binding:vif_type": row["binding_vif_type"],
        "binding:vif_details": row["binding_vif_details"],
        "port_security_enabled": row["port_security_enabled"],
        "security_groups": groups,
        "allowed_address_pairs": [],
        "extra_dhcp_opts": [],
        "dns_name": "",
        "propagate_uplink_status": False,
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


# -- updates and deletion -------------------------------------------------------------------------


def wired_status(admin_state_up: bool) -> str:
    """A bound port's status once its host's agent has wired it (see ``bindings``)."""
    return "ACTIVE" if admin_state_up else "DOWN"


def update_port(
    conn: Connection, context: RequestContext, port_id: str, body: Mapping[str, Any]
) -> Mapping[str, Any]:
    """Apply the plain attributes of an update; binding changes are the caller's (``bindings``).
    Returns the port as it is now, locked for the rest of the transaction."""
    validate.known(body, _UPDATE, "port")
    validate.strings(body, STRINGS)
    row = get_visible(conn, context, port_id, locked=True)
    policy.require_owner(context, row["project_id"], f"port {port_id}")
    policy.check_attributes(context, body, _OPERATOR_ONLY)
    if "mac_address" in body:
        network = network_store.get_network(conn, row["network_id"])
        _check_mac_right(context, network["project_id"] if network else "", body)
    values: dict[str, Any] = {}
    if "mac_address" in body:
        values["mac_address"] = _new_mac(conn, row, body["mac_address"])
    for name in ("name", "description", "device_id", "device_owner"):
        if name in body:
            values[name] = validate.string(body, name)
    if "admin_state_up" in body:
        values["admin_state_up"] = validate.boolean(body, "admin_state_up", True)
        if row["binding_host"]:
            # The bound host's agent reports the device up or down as the port is set.
            values["status"] = wired_status(values["admin_state_up"])
    if "binding:vnic_type" in body:
        vnic = validate.one_of(body, "binding:vnic_type", VNIC_TYPES)
        if vnic != row["binding_vnic_type"] and row["binding_host"]:
            raise exceptions.Conflict(
                f"Port {port_id} is bound; its VNIC type cannot change until it is unbound."
            )
        values["binding_vnic_type"] = vnic
    if "qos_policy_id" in body:
        # A bound port's allocation follows its new request (``bound_requests``, around this).
        if row["binding_host"] and ("binding:host_id" in body or "binding:profile" in body):
            raise exceptions.Conflict(
                f"Port {port_id} is bound: change its QoS policy and its binding in separate "
                "updates."
            )
        values["qos_policy_id"] = networks.qos_policy_of(conn, context, body)
        if values["qos_policy_id"] != row["qos_policy_id"]:
            networks.check_qos_detach(conn, context, row["qos_policy_id"])
    if "port_security_enabled" in body:
        values["port_security_enabled"] = validate.boolean(body, "port_security_enabled", True)
    if "port_security_enabled" in body or "security_groups" in body:
        _regroup(conn, context, row, body, values.get("port_security_enabled"))
    if "fixed_ips" in body:
        _replace_addresses(conn, row, body["fixed_ips"])
    if values.get("mac_address", row["mac_address"]) != row["mac_address"]:
        _move_eui64_addresses(conn, row, values["mac_address"])
    if values or "fixed_ips" in body or "security_groups" in body:
        store.update(conn, port_id, values)
        changed = store.get(conn, port_id)
        assert changed is not None  # locked above
        return changed
    return row


def _regroup(
    conn: Connection,
    context: RequestContext,
    row: Mapping[str, Any],
    body: Mapping[str, Any],
    port_security: bool | None,
) -> None:
    """A new set of security groups, or port security turned on or off: a port without port
    security is in no group, so turning it off takes clearing its groups too (409)."""
    secured = row["port_security_enabled"] if port_security is None else port_security
    if "security_groups" in body:
        asked = body["security_groups"] if body["security_groups"] is not None else []
        groups = security_groups.checked_groups(conn, context, row["project_id"], asked, secured)
        group_store.set_groups_of_port(conn, row["id"], groups)
    elif not secured and group_store.groups_of_ports(conn, [row["id"]]):
        raise exceptions.PortSecurityPortHasSecurityGroup(
            "Port has security group associated. Cannot disable port security or ip address "
            "until security group is removed."
        )


def following_network_policy(conn: Connection, network_id: str) -> list[str]:
    """The ports of a network whose QoS policy is the network's (they have none of their own)."""
    rows = store.list_visible(conn, None, {"network_id": [network_id]})
    return [r["id"] for r in rows if r["qos_policy_id"] is None]


def _new_mac(conn: Connection, row: Mapping[str, Any], asked: Any) -> str:
    """A new MAC address for an unbound port (a bound one's is in its host's hands: 409)."""
    mac = _unicast_mac(asked)
    if mac == row["mac_address"]:
        return mac
    if row["binding_host"]:
        raise exceptions.PortBound(
            f"Unable to complete operation on port {row['id']}: it is bound to host "
            f"{row['binding_host']}, so its MAC address cannot change."
        )
    if store.mac_taken(conn, row["network_id"], mac):
        raise _mac_in_use(row["network_id"], mac)
    return mac


def _move_eui64_addresses(conn: Connection, row: Mapping[str, Any], mac: str) -> None:
    """A new MAC address moves the port's addresses on auto-addressed subnets with it."""
    auto = {s.id: s for s in layout_of(conn, row["network_id"]).subnets if s.auto_address}
    for held in fixed_ips(conn, row["id"]):
        subnet = auto.get(held.subnet_id)
        if subnet is not None:
            store.release_address(conn, row["id"], subnet.id, held.ip_address)
            assign_addresses(conn, row["id"], row["network_id"], [subnet], [(subnet.id, None)], mac)


def _replace_addresses(conn: Connection, row: Mapping[str, Any], fixed: Any) -> None:
    wanted = requested_ips(fixed) if fixed else []
    layout = layout_of(conn, row["network_id"])
    store.release_addresses(conn, row["id"])
    assign_addresses(conn, row["id"], row["network_id"], layout.subnets, wanted, row["mac_address"])


def delete_port(conn: Connection, context: RequestContext, port_id: str) -> None:
    """Everything the port holds goes with it: addresses and bindings (the database cascades)."""
    row = get_visible(conn, context, port_id)
    # The network's owner may also delete the port (upstream's ``delete_port``: a member of
    # the port's project or of the network's).
    network = network_store.get_network(conn, row["network_id"])
    owners = {row["project_id"], network["project_id"] if network is not None else ""}
    policy.require_owner(context, owners, f"port {port_id}")
    _check_not_a_device_port(conn, row)
    router_store.disassociate_port(conn, port_id)
    store.delete(conn, port_id)


def _check_not_a_device_port(conn: Connection, row: Mapping[str, Any]) -> None:
    """A router's gateway or interface, or a floating IP's address, goes with its router
    interface, gateway or floating IP, not through the port API (409, as upstream)."""
    owner, device = row["device_owner"], row["device_id"]
    in_use = (
        owner in (router_store.GATEWAY, router_store.INTERFACE)
        and router_store.get_router(conn, device) is not None
    ) or (owner == router_store.FLOATING and router_store.get_floatingip(conn, device) is not None)
    if in_use:
        raise exceptions.ServicePortInUse(
            f"Port {row['id']} cannot be deleted directly via the port API: has device owner "
            f"{owner}."
        )

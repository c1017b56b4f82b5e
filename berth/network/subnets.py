"""Subnets: what a create or update may say, the routed-network rules, and the API's view.

Addressing is ``ipam``'s: a subnet's cidr, gateway and pools are validated and defaulted there.
On a network of several segments (a routed network) every subnet names its segment; a network's
subnets either all have a segment or none do, and subnets of one network never overlap.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.network import exceptions, ipam, networks, policy, validate
from berth.network.model import Subnet
from berth.network.store import networks as network_store
from berth.network.store import routers as router_store
from berth.network.store import subnets as store

_CREATE = {
    "network_id", "ip_version", "cidr", "name", "description", "gateway_ip", "allocation_pools",
    "dns_nameservers", "host_routes", "enable_dhcp", "ipv6_ra_mode", "ipv6_address_mode",
    "segment_id", "project_id", "tenant_id", "service_types", "subnetpool_id",
}  # fmt: skip
_UPDATE = {"name", "description", "gateway_ip", "allocation_pools", "dns_nameservers", "host_routes",
           "enable_dhcp", "service_types"}  # fmt: skip
# String attributes upstream limits to 255 characters.
STRINGS = ("name", "description")
IPV6_MODES = ("slaac", "dhcpv6-stateful", "dhcpv6-stateless")
# The modes in which hosts make their addresses themselves from the router's advertisements.
AUTO_ADDRESS_MODES = frozenset({"slaac", "dhcpv6-stateless"})


def subnet_of(row: RowMapping) -> Subnet:
    """A stored subnet as ``ipam`` and binding decisions read it."""
    return Subnet(
        id=row["id"],
        network_id=row["network_id"],
        ip_version=row["ip_version"],
        cidr=row["cidr"],
        gateway_ip=row["gateway_ip"],
        allocation_pools=tuple((p["start"], p["end"]) for p in row["allocation_pools"]),
        segment_id=row["segment_id"],
        auto_address=_auto_addressed(row),
    )


def create_subnet(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str:
    validate.known(body, _CREATE, "subnet")
    validate.strings(body, STRINGS)
    if body.get("subnetpool_id") is not None:
        raise exceptions.BadRequest("Subnet pools are not supported: give a cidr.")
    network_id = validate.uuid_value("network_id", body.get("network_id"))
    network = networks.get_visible(conn, context, network_id)
    policy.require_owner(context, network["project_id"], f"network {network_id}")
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "creating a subnet for another project")
    version = validate.one_of(body, "ip_version", (4, 6))
    cidr = validate.string(body, "cidr", max_len=64)
    layout = ipam.plan_subnet(
        cidr,
        version,
        _gateway(body) if "gateway_ip" in body else ipam.AUTO,
        _pools(body) if body.get("allocation_pools") is not None else None,
    )
    segment_id = _segment(conn, network_id, body)
    _check_overlap(conn, network_id, layout.cidr, None)
    subnet_id = str(uuid.uuid4())
    store.insert(conn, {
        "id": subnet_id,
        "network_id": network_id,
        "segment_id": segment_id,
        "project_id": project,
        "name": validate.string(body, "name", ""),
        "description": validate.string(body, "description", ""),
        "ip_version": layout.ip_version,
        "cidr": layout.cidr,
        "gateway_ip": layout.gateway_ip,
        "allocation_pools": [{"start": a, "end": b} for a, b in layout.allocation_pools],
        "dns_nameservers": _addresses(body, "dns_nameservers"),
        "host_routes": _routes(body),
        "enable_dhcp": validate.boolean(body, "enable_dhcp", True),
        **_ipv6_modes(body, version),
    })  # fmt: skip
    return subnet_id


def _gateway(body: Mapping[str, Any]) -> str | None:
    value = body.get("gateway_ip")
    if value is None:
        return None
    return str(validate.string(body, "gateway_ip", max_len=64))


def _pools(body: Mapping[str, Any]) -> list[tuple[str, str]]:
    pools = body["allocation_pools"]
    if not isinstance(pools, list) or not all(
        isinstance(p, dict) and isinstance(p.get("start"), str) and isinstance(p.get("end"), str)
        for p in pools
    ):
        raise exceptions.InvalidInput(
            "Invalid input for allocation_pools. Reason: a list of {start, end} is expected."
        )
    return [(p["start"], p["end"]) for p in pools]


def _addresses(body: Mapping[str, Any], name: str) -> list[str]:
    values = body.get(name) or []
    if not isinstance(values, list):
        raise exceptions.InvalidInput(f"Invalid input for {name}. Reason: a list is expected.")
    for value in values:
        try:
            ipaddress.ip_address(value)
        except (ValueError, TypeError):
            raise exceptions.InvalidInput(
                f"Invalid input for {name}. Reason: '{value}' is not a valid IP address."
            ) from None
    return [str(v) for v in values]


def _routes(body: Mapping[str, Any]) -> list[dict[str, str]]:
    routes = body.get("host_routes") or []
    if not isinstance(routes, list):
        raise exceptions.InvalidInput("Invalid input for host_routes. Reason: a list is expected.")
    found = []
    for route in routes:
        try:
            destination = str(ipaddress.ip_network(route["destination"]))
            nexthop = str(ipaddress.ip_address(route["nexthop"]))
        except (ValueError, TypeError, KeyError):
            raise exceptions.InvalidInput(
                f"Invalid input for host_routes. Reason: '{route}' is not a valid route."
            ) from None
        found.append({"destination": destination, "nexthop": nexthop})
    return found


def _ipv6_mode(body: Mapping[str, Any], name: str, version: int) -> str | None:
    value = validate.one_of(body, name, IPV6_MODES, None)
    if value is not None and version != 6:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: {name} is set for an IPv4 subnet."
        )
    return value  # type: ignore[no-any-return]


def _ipv6_modes(body: Mapping[str, Any], version: int) -> dict[str, str | None]:
    """The router advertisements' mode and the address mode: when both are given they must
    agree (upstream's rule: radvd and dnsmasq cannot be told different things)."""
    ra_mode = _ipv6_mode(body, "ipv6_ra_mode", version)
    address_mode = _ipv6_mode(body, "ipv6_address_mode", version)
    if ra_mode is not None and address_mode is not None and ra_mode != address_mode:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: ipv6_ra_mode set to '{ra_mode}' with "
            f"ipv6_address_mode set to '{address_mode}' is not valid. If both attributes are "
            "set, they must be the same value."
        )
    return {"ipv6_ra_mode": ra_mode, "ipv6_address_mode": address_mode}


def _segment(conn: Connection, network_id: str, body: Mapping[str, Any]) -> str | None:
    segment_id = validate.uuid_or_none(body, "segment_id")
    segments = network_store.segments_of(conn, [network_id]).get(network_id, [])
    if segment_id is not None and segment_id not in {s["id"] for s in segments}:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: segment {segment_id} is not a segment of network {network_id}."
        )
    others = store.of_networks(conn, [network_id])
    if others and any((s["segment_id"] is None) != (segment_id is None) for s in others):
        raise exceptions.BadRequest(
            "The segment_id must be set for all or none of the subnets of a network."
        )
    if segment_id is None and len(segments) > 1:
        raise exceptions.BadRequest(
            f"Network {network_id} has several segments: a subnet on it must name its segment_id."
        )
    return segment_id


def _check_overlap(conn: Connection, network_id: str, cidr: str, ignore: str | None) -> None:
    new = ipaddress.ip_network(cidr)
    for other in store.of_networks(conn, [network_id]):
        if other["id"] != ignore and new.overlaps(ipaddress.ip_network(other["cidr"])):  # type: ignore[arg-type]
            raise exceptions.BadRequest(
                f"Invalid input for operation: Requested subnet with cidr: {cidr} for network: "
                f"{network_id} overlaps with another subnet."
            )


def get_visible(conn: Connection, context: RequestContext, subnet_id: str) -> RowMapping:
    found = store.get(conn, subnet_id)
    if found is None:
        raise exceptions.SubnetNotFound(subnet_id)
    network = network_store.get_network(conn, found["network_id"])
    shared = network is not None and networks.is_shared_with(conn, context, network["id"])
    if not policy.can_see(context, found["project_id"], shared):
        raise exceptions.SubnetNotFound(subnet_id)
    return found


def update_subnet(
    conn: Connection, context: RequestContext, subnet_id: str, body: Mapping[str, Any]
) -> None:
    validate.known(body, _UPDATE, "subnet")
    validate.strings(body, STRINGS)
    found = get_visible(conn, context, subnet_id)
    policy.require_owner(context, found["project_id"], f"subnet {subnet_id}")
    values: dict[str, Any] = {}
    if "gateway_ip" in body or "allocation_pools" in body:
        current = subnet_of(found)
        layout = ipam.plan_subnet(
            current.cidr,
            current.ip_version,
            _gateway(body) if "gateway_ip" in body else current.gateway_ip,
            _pools(body) if body.get("allocation_pools") is not None else current.allocation_pools,
        )
        moved = layout.gateway_ip is not None and layout.gateway_ip != current.gateway_ip
        held = {str(ipaddress.ip_address(a)) for a in store.used_addresses(conn, subnet_id)}
        if moved and layout.gateway_ip in held:
            raise exceptions.IpAddressInUse(
                f"Gateway ip {layout.gateway_ip} conflicts with an address a port holds."
            )
        values["gateway_ip"] = layout.gateway_ip
        values["allocation_pools"] = [{"start": a, "end": b} for a, b in layout.allocation_pools]
    for name in ("name", "description"):
        if name in body:
            values[name] = validate.string(body, name)
    if "dns_nameservers" in body:
        values["dns_nameservers"] = _addresses(body, "dns_nameservers")
    if "host_routes" in body:
        values["host_routes"] = _routes(body)
    if "enable_dhcp" in body:
        values["enable_dhcp"] = validate.boolean(body, "enable_dhcp", True)
    if values:
        store.update(conn, subnet_id, values)


def delete_subnet(conn: Connection, context: RequestContext, subnet_id: str) -> None:
    found = get_visible(conn, context, subnet_id)
    policy.require_owner(context, found["project_id"], f"subnet {subnet_id}")
    if router_store.interface_subnet_routers(conn, [subnet_id]):
        # Even on an auto-addressed subnet: the router holds its gateway address.
        raise exceptions.SubnetInUse(
            f"Unable to complete operation on subnet {subnet_id}: "
            "One or more router interfaces are on this subnet."
        )
    if subnet_of(found).auto_address:
        # Hosts make their own addresses from the prefix (SLAAC): upstream drops the ports'
        # addresses with the subnet, and the ports stay.
        store.release_addresses(conn, subnet_id)
    if store.used_addresses(conn, subnet_id):
        raise exceptions.SubnetInUse(
            f"Unable to complete operation on subnet {subnet_id}: "
            "One or more ports have an IP allocation from this subnet."
        )
    store.delete(conn, subnet_id)


def _auto_addressed(row: RowMapping) -> bool:
    return bool(AUTO_ADDRESS_MODES & {row["ipv6_ra_mode"], row["ipv6_address_mode"]})


def view(row: RowMapping) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "network_id": row["network_id"],
        "segment_id": row["segment_id"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "ip_version": row["ip_version"],
        "cidr": row["cidr"],
        "gateway_ip": row["gateway_ip"],
        "allocation_pools": row["allocation_pools"],
        "dns_nameservers": row["dns_nameservers"],
        "host_routes": row["host_routes"],
        "enable_dhcp": row["enable_dhcp"],
        "ipv6_ra_mode": row["ipv6_ra_mode"],
        "ipv6_address_mode": row["ipv6_address_mode"],
        "subnetpool_id": None,
        "service_types": [],
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


def availability(
    network: RowMapping, rows: Sequence[RowMapping], used: Mapping[str, int]
) -> dict[str, Any]:
    """A network's ``network_ip_availability``: pool sizes and allocated addresses per subnet."""
    per_subnet = [
        {
            "subnet_id": row["id"],
            "subnet_name": row["name"],
            "cidr": row["cidr"],
            "ip_version": row["ip_version"],
            "total_ips": ipam.pool_size(subnet_of(row)),
            "used_ips": used.get(row["id"], 0),
        }
        for row in rows
    ]
    return {
        "network_id": network["id"],
        "network_name": network["name"],
        "project_id": network["project_id"],
        "tenant_id": network["project_id"],
        "total_ips": sum(s["total_ips"] for s in per_subnet),
        "used_ips": sum(s["used_ips"] for s in per_subnet),
        "subnet_ip_availability": per_subnet,
    }

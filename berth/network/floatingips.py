"""Floating IPs: an address of an external network, associated with a fixed address of a port
that a router joins to that network.

The address is held by a port of the external network with no project (device_owner
``network:floatingip``, device_id the floating IP's id), so the external subnets' IPAM hands it
out. An association names a port (and one of its IPv4 addresses, when it has several); it
holds only if a router has its gateway on the floating IP's network and an interface on that
address's subnet, else 404 ``ExternalGatewayForFloatingIPNotFound``, as upstream. Nothing
forwards packets (the hosts are simulated): an associated floating IP is ``ACTIVE``, another
``DOWN``.

Policies are upstream's defaults: a project's members make, associate and release theirs;
choosing the address (``floating_ip_address``) is the admins'.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.config import NetworkSettings
from berth.network import exceptions, policy, ports, rbac, validate
from berth.network.store import networks as network_store
from berth.network.store import ports as port_store
from berth.network.store import rbac as rbac_store
from berth.network.store import routers as store

_CREATE = {
    "floating_network_id", "port_id", "fixed_ip_address", "floating_ip_address", "subnet_id",
    "description", "project_id", "tenant_id",
}  # fmt: skip
_UPDATE = {"port_id", "fixed_ip_address", "description"}
_UNASSOCIATED = {"port_id": None, "fixed_ip_address": None, "router_id": None, "status": "DOWN"}


def create_floatingip(
    conn: Connection, context: RequestContext, settings: NetworkSettings, body: Mapping[str, Any]
) -> str:
    validate.known(body, _CREATE, "floatingip")
    validate.strings(body, ("description",))
    if "floating_network_id" not in body:
        raise exceptions.BadRequest(
            "Failed to parse request. Required attribute 'floating_network_id' not specified"
        )
    network_id = validate.uuid_value("floating_network_id", body["floating_network_id"])
    subnet_id = validate.uuid_or_none(body, "subnet_id")
    address = _address_or_none(body, "floating_ip_address")
    fixed = _address_or_none(body, "fixed_ip_address")
    if address is not None:
        policy.require_privileged(context, "create_floatingip:floating_ip_address")
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "creating a floating IP for another project")
    policy.require_member(context, project, "create_floatingip")
    _check_external(conn, network_id, project)
    floatingip_id = str(uuid.uuid4())
    association = _association(conn, context, network_id, project, body.get("port_id"), fixed)
    port_id = ports.create_device_port(
        conn, settings, network_id, "", (floatingip_id, store.FLOATING), []
    )
    if address is not None or subnet_id is not None:
        ports.assign_addresses(
            conn,
            port_id,
            network_id,
            ports.layout_of(conn, network_id).subnets,
            [(subnet_id, address)],
            _mac_of(conn, port_id),
        )
    else:
        _take_ipv4(conn, port_id, network_id)
    (held,) = port_store.fixed_ips_of(conn, [port_id])[port_id]
    store.insert_floatingip(
        conn,
        {
            "id": floatingip_id,
            "project_id": project,
            "description": validate.string(body, "description", ""),
            "floating_network_id": network_id,
            "floating_port_id": port_id,
            "floating_ip_address": held["ip_address"],
            **association,
        },
    )
    return floatingip_id


def _mac_of(conn: Connection, port_id: str) -> str:
    found = port_store.get(conn, port_id)
    assert found is not None
    return str(found["mac_address"])


def _address_or_none(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not a valid IP address."
        ) from None


def _check_external(conn: Connection, network_id: str, project_id: str) -> None:
    if network_store.get_network(conn, network_id) is None:
        raise exceptions.NetworkNotFound(network_id)
    if not rbac_store.granted_ids(
        conn, rbac.NETWORK, rbac.ACCESS_AS_EXTERNAL, project_id, [network_id]
    ):
        raise exceptions.BadRequest(
            f"Bad floatingip request: Network {network_id} is not a valid external network."
        )


def _take_ipv4(conn: Connection, port_id: str, network_id: str) -> None:
    """The lowest free address of the first IPv4 subnet of the network with one."""
    candidates = [s for s in ports.layout_of(conn, network_id).subnets if s.ip_version == 4]
    if not candidates:
        raise exceptions.BadRequest(
            f"Bad floatingip request: Network {network_id} does not contain any IPv4 subnet."
        )
    for subnet in candidates:
        try:
            ports.take_lowest(conn, port_id, subnet)
            return
        except exceptions.IpAddressGenerationFailure:
            continue
    raise exceptions.IpAddressGenerationFailure(
        f"No more IP addresses available on network {network_id}."
    )


def _association(
    conn: Connection,
    context: RequestContext,
    network_id: str,
    project: str,
    port_id: Any,
    fixed: str | None,
    floatingip_id: str | None = None,
) -> dict[str, Any]:
    """The columns of an association with ``port_id`` (None: with nothing)."""
    if port_id is None:
        if fixed is not None:
            raise exceptions.BadRequest(
                "Bad floatingip request: fixed_ip_address cannot be specified without a port_id."
            )
        return dict(_UNASSOCIATED)
    port_id = validate.uuid_value("port_id", port_id)
    port = ports.get_visible(conn, context, port_id)
    if port["project_id"] != project and not policy.is_privileged(context):
        raise exceptions.BadRequest(
            f"Cannot create floating IP and bind it to Port {port_id}, since that port is owned "
            "by a different project."
        )
    held = port_store.fixed_ips_of(conn, [port_id]).get(port_id, [])
    chosen = _fixed_address(port_id, held, fixed)
    router_id = _router_between(conn, network_id, port_id, chosen)
    for other in store.floatingips_where(
        conn, port_id=port_id, fixed_ip_address=chosen["ip_address"]
    ):
        if other["id"] != floatingip_id and other["floating_network_id"] == network_id:
            raise exceptions.FloatingIPPortAlreadyAssociated(
                f"Cannot associate floating IP {other['floating_ip_address']} ({other['id']}) "
                f"with port {port_id} using fixed IP {chosen['ip_address']}, as that fixed IP "
                f"already has a floating IP on external network {network_id}."
            )
    return {
        "port_id": port_id,
        "fixed_ip_address": chosen["ip_address"],
        "router_id": router_id,
        "status": "ACTIVE",
    }


def _fixed_address(
    port_id: str, held: Sequence[Mapping[str, str]], fixed: str | None
) -> Mapping[str, str]:
    """The port's address the floating IP maps to: the one asked for, else its only IPv4 one."""
    if fixed is not None:
        match = next((ip for ip in held if ip["ip_address"] == fixed), None)
        if match is None:
            raise exceptions.BadRequest(f"Port {port_id} does not have fixed ip {fixed}.")
        return match
    ipv4 = [ip for ip in held if ipaddress.ip_address(ip["ip_address"]).version == 4]
    if not ipv4:
        raise exceptions.BadRequest(
            f"Bad floatingip request: Port {port_id} does not have any fixed IPv4 address."
        )
    if len(ipv4) > 1:
        raise exceptions.BadRequest(
            f"Port {port_id} has multiple fixed IPv4 addresses. Must provide a specific IPv4 "
            "address when assigning a floating IP."
        )
    return ipv4[0]


def _router_between(
    conn: Connection, network_id: str, port_id: str, fixed: Mapping[str, str]
) -> str:
    """The router with its gateway on the floating IP's network and an interface on the fixed
    address's subnet (the first by id, when several)."""
    gateways = store.routers_with_gateway(conn, network_id)
    plugged = store.interface_subnet_routers(conn, [fixed["subnet_id"]]).get(
        fixed["subnet_id"], set()
    )
    both = sorted(gateways & plugged)
    if not both:
        raise exceptions.ExternalGatewayForFloatingIPNotFound(
            f"External network {network_id} is not reachable from subnet {fixed['subnet_id']}. "
            f"Therefore, cannot associate Port {port_id} with a Floating IP."
        )
    return both[0]


def get_visible(conn: Connection, context: RequestContext, floatingip_id: str) -> RowMapping:
    found = store.get_floatingip(conn, floatingip_id)
    if found is None or not policy.can_see(context, found["project_id"]):
        raise exceptions.FloatingIPNotFound(floatingip_id)
    return found


def update_floatingip(
    conn: Connection, context: RequestContext, floatingip_id: str, body: Mapping[str, Any]
) -> None:
    """Associate (``port_id``, ``fixed_ip_address``), release (``port_id: null``) or describe."""
    validate.known(body, _UPDATE, "floatingip")
    validate.strings(body, ("description",))
    fixed = _address_or_none(body, "fixed_ip_address")
    row = get_visible(conn, context, floatingip_id)
    policy.require_owner(context, row["project_id"], f"floating IP {floatingip_id}")
    values: dict[str, Any] = {}
    if "description" in body:
        values["description"] = validate.string(body, "description")
    if "port_id" in body or "fixed_ip_address" in body:
        port_id = body["port_id"] if "port_id" in body else row["port_id"]
        values.update(
            _association(
                conn,
                context,
                row["floating_network_id"],
                row["project_id"],
                port_id,
                fixed,
                floatingip_id,
            )
        )
    store.update_floatingip(conn, floatingip_id, values)


def delete_floatingip(conn: Connection, context: RequestContext, floatingip_id: str) -> None:
    row = get_visible(conn, context, floatingip_id)
    policy.require_owner(context, row["project_id"], f"floating IP {floatingip_id}")
    store.delete_floatingip(conn, floatingip_id)
    port_store.delete(conn, row["floating_port_id"])


def views(conn: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """``{"id", "floating_ip_address", "floating_network_id", "port_id", "fixed_ip_address",
    "router_id", "status", "port_details": null | {...}, ...}``"""
    associated = {r["port_id"] for r in rows if r["port_id"]}
    details = {p: port_store.get(conn, p) for p in sorted(associated)}
    return [_view(row, details.get(row["port_id"]) if row["port_id"] else None) for row in rows]


def _view(row: RowMapping, port: RowMapping | None) -> dict[str, Any]:
    return {
        "id": row["id"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "description": row["description"],
        "floating_network_id": row["floating_network_id"],
        "floating_ip_address": row["floating_ip_address"],
        "port_id": row["port_id"],
        "fixed_ip_address": row["fixed_ip_address"],
        "router_id": row["router_id"],
        "status": row["status"],
        "port_details": None if port is None else _port_details(port),
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


def _port_details(port: RowMapping) -> dict[str, Any]:
    names = ("name", "network_id", "mac_address", "admin_state_up", "status", "device_id")
    return {**{name: port[name] for name in names}, "device_owner": port["device_owner"]}

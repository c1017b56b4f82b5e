"""Routers: a gateway on an external network, interfaces on subnets, and extra routes.

Berth simulates the hosts, so a router is control-plane state only: the ports it holds and the
addresses they take are real (the IPAM hands them out), nothing forwards packets. The gateway is
a port of the external network with no project (device_owner ``network:router_gateway``), its
addresses the ones asked for (``external_fixed_ips``, an admin's choice) or one per IP version.
An interface is a port of the router's project on a subnet's network holding the subnet's
gateway address (by ``subnet_id``), or a port the caller made (by ``port_id``); either way
device_owner ``network:router_interface`` and device_id the router's id. Removing an interface
deletes its port, as upstream.

Policies are upstream's defaults: a project's members make and change their routers and plug
them; ``enable_snat`` and ``external_fixed_ips`` of the gateway are the admins'.
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.config import NetworkSettings
from berth.network import exceptions, ipam, policy, ports, rbac, subnets, validate
from berth.network.store import networks as network_store
from berth.network.store import ports as port_store
from berth.network.store import rbac as rbac_store
from berth.network.store import routers as store
from berth.network.store import subnets as subnet_store

_CREATE = {
    "name", "description", "admin_state_up", "external_gateway_info", "project_id", "tenant_id",
}  # fmt: skip
_UPDATE = {"name", "description", "admin_state_up", "external_gateway_info", "routes"}
_GATEWAY = {"network_id", "enable_snat", "external_fixed_ips"}
# The gateway's attributes upstream keeps to admins (create_router:external_gateway_info:*).
_GATEWAY_OPERATOR_ONLY = ("enable_snat", "external_fixed_ips")
STRINGS = ("name", "description")
# Upstream's max_routes.
MAX_ROUTES = 30


@dataclass(frozen=True)
class Gateway:
    """What a request asks of the gateway."""

    network_id: str
    enable_snat: bool | None
    fixed_ips: list[tuple[str | None, str | None]] | None


# -- routers ------------------------------------------------------------------------------------


def create_router(
    conn: Connection, context: RequestContext, settings: NetworkSettings, body: Mapping[str, Any]
) -> str:
    validate.known(body, _CREATE, "router")
    validate.strings(body, STRINGS)
    gateway = _gateway_request(context, body)
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "creating a router for another project")
    policy.require_member(context, project, "create_router")
    router_id = str(uuid.uuid4())
    store.insert_router(
        conn,
        {
            "id": router_id,
            "project_id": project,
            "name": validate.string(body, "name", ""),
            "description": validate.string(body, "description", ""),
            "admin_state_up": validate.boolean(body, "admin_state_up", True),
            "status": "ACTIVE",
            "gw_network_id": None,
            "enable_snat": True,
            "routes": [],
        },
    )
    if gateway is not None:
        row = store.get_router(conn, router_id)
        assert row is not None
        _set_gateway(conn, settings, row, gateway)
    return router_id


def get_visible(conn: Connection, context: RequestContext, router_id: str) -> RowMapping:
    found = store.get_router(conn, router_id)
    if found is None or not policy.can_see(context, found["project_id"]):
        raise exceptions.RouterNotFound(router_id)
    return found


def _get_own(conn: Connection, context: RequestContext, router_id: str) -> RowMapping:
    found = get_visible(conn, context, router_id)
    policy.require_owner(context, found["project_id"], f"router {router_id}")
    return found


def update_router(
    conn: Connection,
    context: RequestContext,
    settings: NetworkSettings,
    router_id: str,
    body: Mapping[str, Any],
) -> None:
    validate.known(body, _UPDATE, "router")
    validate.strings(body, STRINGS)
    gateway = _gateway_request(context, body)
    routes = _routes(body["routes"]) if "routes" in body else None
    row = _get_own(conn, context, router_id)
    values: dict[str, Any] = {}
    for name in STRINGS:
        if name in body:
            values[name] = validate.string(body, name)
    if "admin_state_up" in body:
        values["admin_state_up"] = validate.boolean(body, "admin_state_up", True)
    if routes is not None:
        _check_nexthops(conn, router_id, routes)
        values["routes"] = routes
    if "external_gateway_info" in body:
        _set_gateway(conn, settings, row, gateway)
    store.update_router(conn, router_id, values)


def delete_router(conn: Connection, context: RequestContext, router_id: str) -> None:
    _get_own(conn, context, router_id)
    if store.router_ports(conn, [router_id], store.INTERFACE).get(router_id):
        raise exceptions.RouterInUse(f"Router {router_id} still has ports")
    _check_no_floatingips(conn, router_id)
    for port in store.router_ports(conn, [router_id], store.GATEWAY).get(router_id, []):
        port_store.delete(conn, port["id"])
    store.delete_router(conn, router_id)


# -- the gateway ----------------------------------------------------------------------------------


def _gateway_request(context: RequestContext, body: Mapping[str, Any]) -> Gateway | None:
    """The gateway a body asks for; None for none (``null`` or ``{}``, or not said)."""
    info = body.get("external_gateway_info")
    if not info:
        if info is not None and not isinstance(info, dict):
            raise exceptions.InvalidInput(
                f"Invalid input for external_gateway_info. Reason: '{info}' is not a dictionary."
            )
        return None
    info = validate.mapping(body, "external_gateway_info")
    validate.known(info, _GATEWAY, "external_gateway_info")
    network_id = validate.uuid_value("network_id", info.get("network_id"))
    snat = validate.boolean(info, "enable_snat", True) if "enable_snat" in info else None
    fixed = info.get("external_fixed_ips")
    if fixed is not None and not isinstance(fixed, list):
        raise exceptions.InvalidInput(
            "Invalid input for external_fixed_ips. Reason: a list of objects is expected."
        )
    wanted = ports.requested_ips(fixed) if fixed else None
    for name in _GATEWAY_OPERATOR_ONLY:
        if name in info and not policy.is_privileged(context):
            raise exceptions.NotAuthorized(
                f"The policy does not allow setting external_gateway_info:{name}."
            )
    return Gateway(network_id, snat, wanted)


def _set_gateway(
    conn: Connection, settings: NetworkSettings, row: RowMapping, wanted: Gateway | None
) -> None:
    router_id = row["id"]
    current = store.router_ports(conn, [router_id], store.GATEWAY).get(router_id, [])
    if wanted is None:
        if current:
            _check_no_floatingips(conn, router_id, gateway=True)
        for port in current:
            port_store.delete(conn, port["id"])
        store.update_router(conn, router_id, {"gw_network_id": None, "enable_snat": True})
        return
    _check_external(conn, wanted.network_id, row["project_id"])
    same_network = wanted.network_id == row["gw_network_id"]
    if not same_network or wanted.fixed_ips is not None or not current:
        if current and not same_network:
            _check_no_floatingips(conn, router_id, gateway=True)
        for port in current:
            port_store.delete(conn, port["id"])
        ports.create_device_port(
            conn, settings, wanted.network_id, "", (router_id, store.GATEWAY), wanted.fixed_ips
        )
    # SNAT stays as it was on the same network, unless said; a new gateway starts with it on.
    snat = wanted.enable_snat
    if snat is None:
        snat = row["enable_snat"] if same_network else True
    store.update_router(conn, router_id, {"gw_network_id": wanted.network_id, "enable_snat": snat})


def _check_external(conn: Connection, network_id: str, project_id: str) -> None:
    """The gateway's network must exist (404) and be external for the router's project (400)."""
    if network_store.get_network(conn, network_id) is None:
        raise exceptions.NetworkNotFound(network_id)
    external = rbac_store.granted_ids(
        conn, rbac.NETWORK, rbac.ACCESS_AS_EXTERNAL, project_id, [network_id]
    )
    if not external:
        raise exceptions.BadRequest(
            f"Bad router request: Network {network_id} is not an external network."
        )


def _check_no_floatingips(conn: Connection, router_id: str, gateway: bool = False) -> None:
    used = store.floatingips_where(conn, router_id=router_id)
    if used and gateway:
        raise exceptions.RouterExternalGatewayInUseByFloatingIp(
            f"Gateway cannot be updated for router {router_id}, since a gateway to external "
            f"network {used[0]['floating_network_id']} is required by one or more floating IPs."
        )
    if used:
        raise exceptions.RouterInUse(f"Router {router_id} still has floating IPs")


# -- extra routes -------------------------------------------------------------------------------


def _routes(given: Any) -> list[dict[str, str]]:
    """``[{"destination": cidr, "nexthop": ip}]`` normalised; ``null`` is none."""
    if given is None:
        return []
    if not isinstance(given, list) or not all(isinstance(r, dict) for r in given):
        raise exceptions.InvalidInput("Invalid input for routes. Reason: a list is expected.")
    if len(given) > MAX_ROUTES:
        raise exceptions.BadRequest(
            f"Number of routes exceeds the maximum {MAX_ROUTES} per router."
        )
    found: list[dict[str, str]] = []
    for route in given:
        validate.known(route, {"destination", "nexthop"}, "routes")
        try:
            destination = ipaddress.ip_network(str(route.get("destination")), strict=False)
            nexthop = ipaddress.ip_address(str(route.get("nexthop")))
        except ValueError:
            raise exceptions.InvalidInput(
                f"Invalid input for routes. Reason: '{route}' is not a valid route."
            ) from None
        if destination.version != nexthop.version:
            raise exceptions.InvalidInput(
                f"Invalid input for routes. Reason: '{route}' mixes IP versions."
            )
        entry = {"destination": str(destination), "nexthop": str(nexthop)}
        if entry not in found:
            found.append(entry)
    return found


def _check_nexthops(conn: Connection, router_id: str, routes: Sequence[Mapping[str, str]]) -> None:
    """Every nexthop must be on a subnet the router has an interface on (400, as upstream)."""
    cidrs = [ipaddress.ip_network(s["cidr"]) for s in _interface_subnets(conn, router_id)]
    for route in routes:
        if not any(ipaddress.ip_address(route["nexthop"]) in cidr for cidr in cidrs):
            raise exceptions.BadRequest(
                f"Invalid format for routes: {route}, the nexthop {route['nexthop']} is not "
                "connected with router."
            )


# -- interfaces -----------------------------------------------------------------------------------


def _interface_subnets(conn: Connection, router_id: str) -> list[RowMapping]:
    interfaces = store.router_ports(conn, [router_id], store.INTERFACE).get(router_id, [])
    held = port_store.fixed_ips_of(conn, [p["id"] for p in interfaces])
    subnet_ids = {ip["subnet_id"] for found in held.values() for ip in found}
    found = (subnet_store.get(conn, subnet_id) for subnet_id in sorted(subnet_ids))
    return [row for row in found if row is not None]


def add_interface(
    conn: Connection,
    context: RequestContext,
    settings: NetworkSettings,
    router_id: str,
    body: Mapping[str, Any],
) -> dict[str, Any]:
    """Plug the router into a subnet (its gateway address) or onto a port; the interface's
    ``{"id", "port_id", "subnet_id", "subnet_ids", "network_id", "project_id"}``."""
    subnet_id, port_id = interface_request(body)
    if subnet_id is not None and port_id is not None:
        raise exceptions.BadRequest("Cannot specify both subnet-id and port-id")
    router = _get_own(conn, context, router_id)
    if port_id is not None:
        port = _plug_port(conn, context, router, port_id)
    else:
        assert subnet_id is not None
        port = _plug_subnet(conn, context, settings, router, subnet_id)
    return _interface_info(conn, router, port)


def interface_request(body: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The ``(subnet_id, port_id)`` of an interface body, one of them at least (else 400)."""
    validate.known(body, {"subnet_id", "port_id"}, "router interface")
    subnet_id = validate.uuid_or_none(body, "subnet_id")
    port_id = validate.uuid_or_none(body, "port_id")
    if subnet_id is None and port_id is None:
        raise exceptions.BadRequest("Either subnet_id or port_id must be specified")
    return subnet_id, port_id


def _plug_subnet(
    conn: Connection,
    context: RequestContext,
    settings: NetworkSettings,
    router: RowMapping,
    subnet_id: str,
) -> RowMapping:
    subnet = subnets.get_visible(conn, context, subnet_id)
    if not subnet["gateway_ip"]:
        raise exceptions.BadRequest(
            f"Bad router request: Subnet {subnet_id} for router interface must have a gateway IP."
        )
    _check_new_subnets(conn, router["id"], [subnet])
    port_id = ports.create_device_port(
        conn,
        settings,
        subnet["network_id"],
        router["project_id"],
        (router["id"], store.INTERFACE),
        [],
    )
    gateway = subnet["gateway_ip"]
    offset = ipam.address_offset(subnets.subnet_of(subnet), gateway)
    if not port_store.take_address(conn, port_id, subnet["network_id"], subnet_id, gateway, offset):
        raise exceptions.IpAddressInUse(
            f"Unable to complete operation for network {subnet['network_id']}. The IP address "
            f"{subnet['gateway_ip']} is in use."
        )
    found = port_store.get(conn, port_id)
    assert found is not None
    return found


def _plug_port(
    conn: Connection, context: RequestContext, router: RowMapping, port_id: str
) -> RowMapping:
    port = ports.get_visible(conn, context, port_id)
    if port["device_id"] or port["device_owner"]:
        raise exceptions.PortInUse(
            f"Unable to complete operation on port {port_id} for network {port['network_id']}. "
            f"Port already has an attached device {port['device_id'] or port['device_owner']}."
        )
    held = port_store.fixed_ips_of(conn, [port_id]).get(port_id, [])
    if not held:
        raise exceptions.BadRequest(
            "Bad router request: Router port must have at least one fixed IP."
        )
    found = [subnet_store.get(conn, ip["subnet_id"]) for ip in held]
    _check_new_subnets(conn, router["id"], [s for s in found if s is not None])
    port_store.update(
        conn,
        port_id,
        {"device_id": router["id"], "device_owner": store.INTERFACE, "status": "ACTIVE"},
    )
    updated = port_store.get(conn, port_id)
    assert updated is not None
    return updated


def _check_new_subnets(conn: Connection, router_id: str, new: Sequence[RowMapping]) -> None:
    """A router has one interface per subnet, and its subnets never overlap (400)."""
    plugged = _interface_subnets(conn, router_id)
    for subnet in new:
        for other in plugged:
            if other["id"] == subnet["id"]:
                raise exceptions.BadRequest(
                    f"Bad router request: Router already has a port on subnet {subnet['id']}."
                )
            if ipaddress.ip_network(other["cidr"]).overlaps(ipaddress.ip_network(subnet["cidr"])):
                raise exceptions.BadRequest(
                    f"Bad router request: Cidr {subnet['cidr']} of subnet {subnet['id']} "
                    f"overlaps with cidr {other['cidr']} of subnet {other['id']}."
                )


def remove_interface(
    conn: Connection, context: RequestContext, router_id: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    """Unplug by port (the port goes) or by subnet (its address goes, and the port with it
    when it holds no other); refused (409) while a floating IP or an extra route needs it."""
    subnet_id, port_id = interface_request(body)
    router = _get_own(conn, context, router_id)
    interfaces = store.router_ports(conn, [router_id], store.INTERFACE).get(router_id, [])
    held = port_store.fixed_ips_of(conn, [p["id"] for p in interfaces])
    if port_id is not None:
        port = next((p for p in interfaces if p["id"] == port_id), None)
        if port is None:
            raise exceptions.RouterInterfaceNotFound(
                f"Router {router_id} does not have an interface with id {port_id}"
            )
        removing = {ip["subnet_id"] for ip in held.get(port_id, [])}
        if subnet_id is not None and subnet_id not in removing:
            raise exceptions.BadRequest(f"Subnet {subnet_id} could not be found on port {port_id}.")
    else:
        port = next(
            (p for p in interfaces if any(ip["subnet_id"] == subnet_id for ip in held[p["id"]])),
            None,
        )
        if port is None:
            raise exceptions.RouterInterfaceNotFoundForSubnet(
                f"Router {router_id} has no interface on subnet {subnet_id}"
            )
        removing = {str(subnet_id)}
    info = _interface_info(conn, router, port)
    cidrs = [
        ipaddress.ip_network(row["cidr"])
        for row in (subnet_store.get(conn, s) for s in sorted(removing))
        if row is not None
    ]
    _check_unused(conn, router, cidrs)
    if removing >= {ip["subnet_id"] for ip in held.get(port["id"], [])}:
        port_store.delete(conn, port["id"])
    else:
        port_store.release_addresses(conn, port["id"], removing)
    return info


def _check_unused(
    conn: Connection,
    router: RowMapping,
    cidrs: Sequence[ipaddress.IPv4Network | ipaddress.IPv6Network],
) -> None:
    def on_it(address: str | None) -> bool:
        return address is not None and any(ipaddress.ip_address(address) in c for c in cidrs)

    for fip in store.floatingips_where(conn, router_id=router["id"]):
        if on_it(fip["fixed_ip_address"]):
            raise exceptions.RouterInterfaceInUseByFloatingIP(
                f"Router interface for subnet on router {router['id']} cannot be deleted, as it "
                f"is required by one or more floating IPs ({fip['id']})."
            )
    for route in router["routes"]:
        if on_it(route["nexthop"]):
            raise exceptions.RouterInterfaceInUseByRoute(
                f"Router interface on router {router['id']} cannot be deleted, as it is "
                f"required by one or more routes ({route['destination']} via {route['nexthop']})."
            )


def _interface_info(conn: Connection, router: RowMapping, port: RowMapping) -> dict[str, Any]:
    subnet_ids = [
        ip["subnet_id"] for ip in port_store.fixed_ips_of(conn, [port["id"]]).get(port["id"], [])
    ]
    return {
        "id": router["id"],
        "tenant_id": router["project_id"],
        "project_id": router["project_id"],
        "port_id": port["id"],
        "network_id": port["network_id"],
        "subnet_id": subnet_ids[0] if subnet_ids else None,
        "subnet_ids": subnet_ids,
    }


# -- reading --------------------------------------------------------------------------------------


def views(conn: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """``{"id", "name", ..., "external_gateway_info": null | {"network_id", "enable_snat",
    "external_fixed_ips": [{"subnet_id", "ip_address"}]}, "routes": [...]}``"""
    ids = [r["id"] for r in rows]
    gateways = store.router_ports(conn, ids, store.GATEWAY)
    addresses = port_store.fixed_ips_of(
        conn, [p["id"] for found in gateways.values() for p in found]
    )
    return [_view(row, gateways.get(row["id"], []), addresses) for row in rows]


def _view(
    row: RowMapping, gateway: list[RowMapping], addresses: Mapping[str, list[dict[str, str]]]
) -> dict[str, Any]:
    info = None
    if row["gw_network_id"] is not None:
        info = {
            "network_id": row["gw_network_id"],
            "enable_snat": row["enable_snat"],
            "external_fixed_ips": [ip for p in gateway for ip in addresses.get(p["id"], [])],
        }
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "admin_state_up": row["admin_state_up"],
        "status": row["status"],
        "external_gateway_info": info,
        "routes": row["routes"],
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }

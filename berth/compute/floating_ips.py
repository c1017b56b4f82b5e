"""Nova's floating IP proxies: the network service's floating IPs in the Compute API's words.

``os-floating-ips`` lists, shows, allocates (from a *pool*: an external network, named by its
name or id) and releases the caller's project's floating IPs; the server actions
``addFloatingIp`` and ``removeFloatingIp`` associate one with a fixed address of the server's
ports and release it. The network service decides everything (which router joins the port to
the pool, who may do what); this module only speaks for the caller's project and translates
the refusals, as Nova's proxies do.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from berth.common.context import RequestContext
from berth.compute import exceptions, servers
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.service import ComputeService


def _network(service: ComputeService) -> NetworkClient:
    if service.network is None:
        raise exceptions.ServiceUnavailable("The compute API has no network service to ask.")
    return service.network


def _view(network: NetworkClient, floating: dict[str, Any]) -> dict[str, Any]:
    """``{"id", "ip", "fixed_ip", "instance_id", "pool"}``; the pool is the network's name."""
    details = floating.get("port_details") or {}
    return {
        "id": floating["id"],
        "ip": floating["floating_ip_address"],
        "fixed_ip": floating["fixed_ip_address"],
        "instance_id": details.get("device_id") or None,
        "pool": network.network(floating["floating_network_id"])["name"],
    }


def list_floating_ips(service: ComputeService, context: RequestContext) -> list[dict[str, Any]]:
    network = _network(service)
    found = network.floatingips(project_id=context.project_id or "")
    return [_view(network, floating) for floating in found]


def show_floating_ip(
    service: ComputeService, context: RequestContext, floating_ip_id: str
) -> dict[str, Any]:
    network = _network(service)
    return _view(network, _own(network, context, floating_ip_id))


def _own(network: NetworkClient, context: RequestContext, floating_ip_id: str) -> dict[str, Any]:
    """The project's floating IP (the service sees every project's: others are a 404 here)."""
    try:
        found = network.floatingip(floating_ip_id)
    except NetworkError as exc:
        if exc.status in (400, 404):
            raise _not_found(floating_ip_id) from None
        raise
    if found["project_id"] != context.project_id and not context.is_admin:
        raise _not_found(floating_ip_id)
    return found


def _not_found(floating_ip_id: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Floating IP not found for ID {floating_ip_id}")


def allocate(service: ComputeService, context: RequestContext, pool: str | None) -> dict[str, Any]:
    """A new floating IP of the project from ``pool`` (none: the first external network)."""
    network = _network(service)
    pools = network.networks(**{"router:external": "true"})
    chosen = [p for p in pools if pool is None or pool in (p["id"], p["name"])]
    if not chosen:
        raise exceptions.NotFound(f"Floating IP pool not found: {pool}.")
    first = sorted(chosen, key=lambda p: (p["name"], p["id"]))[0]
    try:
        created = network.create_floatingip(first["id"], context.project_id or "")
    except NetworkError as exc:
        if exc.kind == "OverQuota":
            raise exceptions.Forbidden("Maximum number of floating IPs exceeded") from None
        if exc.kind == "IpAddressGenerationFailure":
            raise exceptions.NotFound(f"No more floating IPs in pool {first['name']}.") from None
        raise
    return _view(network, created)


def release(service: ComputeService, context: RequestContext, floating_ip_id: str) -> None:
    network = _network(service)
    network.delete_floatingip(_own(network, context, floating_ip_id)["id"])


def _by_address(network: NetworkClient, context: RequestContext, address: str) -> dict[str, Any]:
    found = network.floatingips(project_id=context.project_id or "", floating_ip_address=address)
    if not found:
        raise exceptions.NotFound(f"Floating IP {address} not found.")
    return found[0]


def associate(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    address: str,
    fixed_address: str | None,
    may_see: Callable[[str], bool],
) -> None:
    """Map the floating address to a fixed address of the server: the one given, else the
    first IPv4 address of its ports."""
    servers.get_server(service, context, server_uuid, may_see)
    network = _network(service)
    floating = _by_address(network, context, address)
    held = [
        (port["id"], ip["ip_address"])
        for port in network.ports(device_id=server_uuid)
        for ip in port["fixed_ips"]
    ]
    if fixed_address is not None:
        chosen = next((h for h in held if h[1] == fixed_address), None)
        if chosen is None:
            raise exceptions.BadRequest("Specified fixed address not assigned to instance")
    else:
        chosen = next((h for h in held if ipaddress.ip_address(h[1]).version == 4), None)
        if chosen is None:
            raise exceptions.BadRequest("No fixed IPs associated to instance")
    try:
        network.update_floatingip(floating["id"], port_id=chosen[0], fixed_ip_address=chosen[1])
    except NetworkError as exc:
        if exc.status in (400, 404, 409):
            raise exceptions.BadRequest(
                f"Unable to associate floating IP {address} to fixed IP {chosen[1]} for "
                f"instance {server_uuid}. Error: {exc}"
            ) from None
        raise


def disassociate(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    address: str,
    may_see: Callable[[str], bool],
) -> None:
    servers.get_server(service, context, server_uuid, may_see)
    network = _network(service)
    floating = _by_address(network, context, address)
    ports = {port["id"] for port in network.ports(device_id=server_uuid)}
    if floating["port_id"] not in ports:
        raise exceptions.Conflict(
            f"Floating IP {address} is not associated with instance {server_uuid}."
        )
    network.update_floatingip(floating["id"], port_id=None)

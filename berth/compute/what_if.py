"""A what-if of a boot request: the RequestSpec a ``POST /servers`` body would make, asked of
the scheduler without claiming anything (``SchedulerAPI.what_if``).

The body is checked as a create checks it (flavor, image, zone, key pair, server group,
networks and ports the caller may use), quotas aside: the question is the fleet's room, not the
project's. Nothing is written: no BuildRequest, no port, no allocation, no binding.

Ports. A port the body names (``{"port": ID}``) is read as it is, with the resource request
and the routed-network segments the network service gives it: what a boot would send the
scheduler. A network the body names (``{"uuid": NET}``, ``auto``) has no port yet, so one is
modelled, as the network service would make it for a server: VNIC type ``normal``, the
network's QoS policy (its minimum bandwidth and packet rate rules), the physical networks of
the network's segments, and on a routed network the segments with a free address (the one
holding ``fixed_ip`` when given). The request is worked out with the network service's own
function (``berth.network.resource_request``), so it is the one a created port would carry; a
modelled port's id is made up for the answer (``port_id`` null, its ``network_id`` named).
"""

from __future__ import annotations

import ipaddress
import uuid as uuidlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from berth.common.context import RequestContext
from berth.compute import exceptions, servers
from berth.compute.clients.network import NetworkClient
from berth.compute.conductor import claims, ports
from berth.compute.objects import request_spec as rs
from berth.compute.objects.what_if import WhatIf
from berth.compute.server_input import ServerRequest
from berth.compute.service import ComputeService
from berth.network.model import qos_rule
from berth.network.resource_request import resource_request

__all__ = ["Asked", "AskedPort", "ask"]


@dataclass(frozen=True)
class AskedPort:
    """A port of the request: an existing one (``port_id``) or one modelled on a network."""

    request: rs.PortRequest
    network_id: str
    port_id: str | None


@dataclass(frozen=True)
class Asked:
    """A what-if's question (the spec) and the scheduler's answer."""

    spec: rs.RequestSpec
    ports: tuple[AskedPort, ...]
    answer: WhatIf


def ask(
    service: ComputeService, context: RequestContext, request: ServerRequest, count: int
) -> Asked:
    if service.scheduler is None or service.network is None:
        raise exceptions.ServiceUnavailable("What-ifs need the scheduler and the network service.")
    if (
        count > 1
        and isinstance(request.networks, list)
        and any("port" in entry for entry in request.networks)
    ):
        raise exceptions.BadRequest(
            "Unable to launch multiple instances with a single configured port ID."
        )
    servers.check_networks(service.network, context, request.networks)
    with service.api_db.read() as conn:
        flavor = servers.requested_flavor(conn, context, request.flavor_ref)
        image, size = servers.requested_image(conn, context, request.image_ref)
        servers.check_fits(image, size, flavor)
        servers.check_zone(conn, service.settings, request.availability_zone)
        servers.check_key_name(conn, context.user_id or "", request.key_name)
        group = servers.requested_group(conn, context, request.hints.group)
    try:
        asked_ports = _ports(service.network, context.project_id or "", request.networks)
    except ports.PortsUnusable as exc:
        raise exceptions.BadRequest(str(exc)) from None
    spec = rs.RequestSpec(
        instance_uuids=tuple(str(uuidlib.uuid4()) for _ in range(count)),
        project_id=context.project_id or "",
        user_id=context.user_id or "",
        flavor=servers.spec_flavor(flavor),
        image=rs.Image(
            id=image["id"],
            properties=image["properties"],
            min_disk=image["min_disk"],
            min_ram=image["min_ram"],
        ),
        ports=tuple(p.request for p in asked_ports),
        availability_zone=request.availability_zone,
        hints=request.hints,
        server_group=group,
    )
    spec = claims.with_group_hosts(service.api_db, service.cells, spec)
    return Asked(spec, tuple(asked_ports), service.scheduler.what_if(spec))


def _ports(
    network: NetworkClient, project_id: str, wanted: str | list[dict[str, str]]
) -> list[AskedPort]:
    if wanted == "none":
        return []
    if wanted == "auto":
        wanted = [{"uuid": ports.auto_network(network, project_id)}]
    assert isinstance(wanted, list)
    found = []
    for entry in wanted:
        if "port" in entry:
            port = network.port(entry["port"])
            (request,) = ports.requests(network, [port])
            found.append(AskedPort(request, port["network_id"], port["id"]))
        else:
            port = _modelled_port(network, entry["uuid"], entry.get("fixed_ip"))
            (request,) = ports.requests(network, [port])
            found.append(AskedPort(request, entry["uuid"], None))
    return found


def _modelled_port(network: NetworkClient, network_id: str, fixed_ip: str | None) -> dict[str, Any]:
    """The port a boot would create on the network, as the network service would show it."""
    port_id = str(uuidlib.uuid4())
    found = network.network(network_id)
    rules = ()
    if found.get("qos_policy_id"):
        policy = network.qos_policy(found["qos_policy_id"])
        rules = tuple(
            qos_rule(
                rule["type"], rule.get("direction", "egress"),
                min_kbps=rule.get("min_kbps"), min_kpps=rule.get("min_kpps"),
                max_kbps=rule.get("max_kbps"), max_burst_kbps=rule.get("max_burst_kbps"),
            )
            for rule in policy.get("rules") or ()
        )  # fmt: skip
    physnets = [s.get("physical_network") for s in network.segments(network_id=network_id)]
    requested = resource_request(port_id, "normal", rules, physnets)
    return {
        "id": port_id,
        "network_id": network_id,
        "fixed_ips": _fixed_ips(network, network_id, fixed_ip),
        "binding:vnic_type": "normal",
        "resource_request": requested.as_dict() if requested else {},
    }


def _fixed_ips(
    network: NetworkClient, network_id: str, fixed_ip: str | None
) -> list[dict[str, str]]:
    """The fixed address asked for, on the subnet that holds it (which pins a routed port's
    segment); BadRequest when no subnet of the network holds it."""
    if fixed_ip is None:
        return []
    address = ipaddress.ip_address(fixed_ip)
    for subnet in network.subnets(network_id=network_id):
        if address in ipaddress.ip_network(subnet["cidr"]):
            return [{"subnet_id": subnet["id"], "ip_address": fixed_ip}]
    raise exceptions.BadRequest(
        f"Invalid networks: no subnet of network {network_id} holds fixed_ip {fixed_ip}."
    )


def port_providers(
    asked: Sequence[AskedPort], port_allocations: Mapping[str, Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Per port of the request, which provider serves each of its request groups::

    [{"port_id": null, "network_id": N, "request_groups": [
        {"id": G, "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}, "provider": RP}]}]
    """
    shown = []
    for port in asked:
        chosen = port_allocations.get(port.request.port_id, {})
        shown.append(
            {
                "port_id": port.port_id,
                "network_id": port.network_id,
                "request_groups": [
                    {
                        "id": str(group["id"]),
                        "resources": dict(group.get("resources") or {}),
                        "required": list(group.get("required") or ()),
                        "provider": chosen.get(str(group["id"])),
                    }
                    for group in port.request.request_groups
                ],
            }
        )
    return shown

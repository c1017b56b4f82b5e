"""A server's ports as the conductors handle them: got or made before scheduling, described to
the scheduler (resource requests, routed-network segments), bound after it.

Each port of a server is a ``PortEntry``; the instance keeps them as its ``network_info``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.objects.build import PortEntry
from berth.compute.objects.request_spec import PortRequest


class PortsUnusable(Exception):
    """The server's networks or ports cannot be used (the message says which and why)."""


def prepare(
    network: NetworkClient, instance: Mapping[str, Any], made: list[PortEntry]
) -> list[dict[str, Any]]:
    """Get or create every port of the server, appending each to ``made`` as soon as it exists
    (so that a failure half way leaves ``made`` holding what must be given back). Returns the
    ports as the network service answered for them (with their resource requests)."""
    wanted = instance["networks"]
    if wanted == "none":
        return []
    if wanted == "auto":
        wanted = [{"uuid": auto_network(network, instance["project_id"])}]
    owner = f"compute:{instance.get('availability_zone') or 'nova'}"
    answered: list[dict[str, Any]] = []
    for request in wanted:
        if "port" in request:
            port = network.port(request["port"])
            if port["device_id"] and port["device_id"] != instance["uuid"]:
                raise PortsUnusable(f"Port {port['id']} is in use by {port['device_id']}.")
            made.append(_entry(port, created=False))
            port = network.update_port(port["id"], device_id=instance["uuid"], device_owner=owner)
        else:
            attributes: dict[str, Any] = {"device_id": instance["uuid"], "device_owner": owner}
            if request.get("fixed_ip"):
                attributes["fixed_ips"] = [{"ip_address": request["fixed_ip"]}]
            if instance.get("security_groups"):
                # The groups the create named; without, the network gives the default group.
                attributes["security_groups"] = instance["security_groups"]
            port = network.create_port(request["uuid"], instance["project_id"], **attributes)
            made.append(_entry(port, created=True))
        answered.append(port)
    return answered


def auto_network(network: NetworkClient, project_id: str) -> str:
    """``networks: auto``: the project's one network, else the one shared network."""
    own = network.networks(project_id=project_id)
    if len(own) == 1:
        return str(own[0]["id"])
    shared = network.networks(shared="true")
    if not own and len(shared) == 1:
        return str(shared[0]["id"])
    raise PortsUnusable(
        "Unable to choose a network automatically: the project has "
        f"{len(own)} networks and {len(shared)} shared ones are visible; give networks."
    )


def _entry(port: Mapping[str, Any], created: bool) -> PortEntry:
    return PortEntry(
        port_id=port["id"],
        network_id=port["network_id"],
        mac_address=port["mac_address"],
        fixed_ips=tuple(port["fixed_ips"]),
        vnic_type=port.get("binding:vnic_type", "normal"),
        created_by_compute=created,
    )


def requests(
    network: NetworkClient,
    answered: Sequence[Mapping[str, Any]],
    networks: dict[str, Mapping[str, Any]] | None = None,
) -> list[PortRequest]:
    """What the scheduler must know of each port: its resource request and, on a routed
    network, the segments it may land in (those that still have a free address). ``networks``
    collects the ports' networks as read (for ``refreshed``)."""
    read = {} if networks is None else networks
    segments_of: dict[str, dict[str, str]] = {}
    found = []
    for port in answered:
        net = port["network_id"]
        if net not in segments_of:
            segments_of[net] = _segment_of_subnets(network, net, read)
        found.append(
            PortRequest(
                port_id=port["id"],
                resource_request=port.get("resource_request") or {},
                segment_aggregates=tuple(_segments(network, port, segments_of[net])),
                vnic_type=port.get("binding:vnic_type", "normal"),
            )
        )
    return found


def _segment_of_subnets(
    network: NetworkClient, network_id: str, read: dict[str, Mapping[str, Any]]
) -> dict[str, str]:
    """Subnet -> segment of a routed network's subnets; empty, without reading the subnets, for
    a network that is one L2 domain (``l2_adjacency``: no subnet of it is on a segment)."""
    found = read[network_id] = read.get(network_id) or network.network(network_id)
    if found.get("l2_adjacency") is True:
        return {}
    subnets = network.subnets(network_id=network_id)
    return {s["id"]: s["segment_id"] for s in subnets if s["segment_id"]}


def _segments(
    network: NetworkClient, port: Mapping[str, Any], segment_of: Mapping[str, str]
) -> list[str]:
    """The segments (their Placement aggregates have the same uuid) a routed-network port may
    use, from its network's subnets by segment; empty for a port on an ordinary network."""
    if not segment_of:
        return []
    pinned = {
        segment_of[ip["subnet_id"]] for ip in port["fixed_ips"] if ip["subnet_id"] in segment_of
    }
    if pinned:
        return sorted(pinned)
    per_subnet = network.ip_availability(port["network_id"])["subnet_ip_availability"]
    free = {s["subnet_id"] for s in per_subnet if s["total_ips"] > s["used_ips"]}
    usable = sorted({segment for subnet, segment in segment_of.items() if subnet in free})
    if not usable:
        raise PortsUnusable(
            f"No segment of network {port['network_id']} has a free IP address left for port {port['id']}."
        )
    return usable


def bind_all(
    network: NetworkClient,
    made: Sequence[PortEntry],
    host: str,
    allocations: Mapping[str, Mapping[str, str]],
    bound: dict[str, Mapping[str, Any]] | None = None,
) -> None:
    """Bind every port to ``host`` with the providers of its request groups; on a refusal the
    ports bound so far are unbound again and the refusal is raised. ``bound`` collects each
    port as the network service answered its binding (for ``refreshed``)."""
    answers: dict[str, Mapping[str, Any]] = {}
    try:
        for entry in made:
            answers[entry.port_id] = network.bind(
                entry.port_id, host, allocations.get(entry.port_id)
            )
    except NetworkError:
        for port_id in answers:
            network.unbind(port_id)
        raise
    if bound is not None:
        bound.update(answers)


def refreshed(
    network: NetworkClient,
    made: Sequence[PortEntry],
    known: Mapping[str, Mapping[str, Any]] | None = None,
    networks: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[PortEntry]:
    """The entries with the ports' current addresses (a deferred address comes with binding);
    a port in ``known`` (as its binding was just answered) is not read again, nor a network in
    ``networks`` (as ``requests`` read it)."""
    names = {network_id: found["name"] for network_id, found in (networks or {}).items()}
    out = []
    for entry in made:
        port = (known or {}).get(entry.port_id) or network.port(entry.port_id)
        if port["network_id"] not in names:
            names[port["network_id"]] = network.network(port["network_id"])["name"]
        out.append(
            dataclasses.replace(
                entry,
                fixed_ips=tuple(port["fixed_ips"]),
                network_name=names[port["network_id"]],
            )
        )
    return out

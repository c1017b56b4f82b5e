"""Attaching a port to a server on this host, and detaching it (Nova's os-interface).

The API calls the server's host (a synchronous ``call``): the host owns the server's PCI devices,
and everything an attach takes is taken here, in this order, each step undone in reverse when a
later one fails, so a refused attach leaves nothing behind::

    1. the port: the user's (device_id set to the server), or one made on the network
    2. its resources: GET /allocation_candidates for only its request groups, in the tree of
       this host's compute node; a virtual function on the physical function the candidate
       names (SR-IOV); PUT /allocations/{server} with what the server held plus the port's
       groups, under the consumer generation (a lost race asks for candidates again)
    3. the binding to this host, its profile naming the providers of the port's groups (the
       port is ACTIVE once bound: the host's network agent wires it)
    4. the port's entry in the server's network_info; the virtual function allocated

A detach gives back the same in reverse: the port's groups come off the server's allocation on
the providers its profile names (nothing else of the allocation changes), its virtual function
is released, the port is deleted if the compute service made it or handed back unbound, and its
entry leaves network_info. Each records its event under the instance action the API began.
Refusals are ``InterfaceRefused`` with the status the API answers (Nova's: 404 for an unknown
port or network, 409 for a port in use or an address taken, 400 for what this host cannot give).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.common.db import Database
from berth.compute import actions, cleanup, interface_allocations
from berth.compute.clients.network import BindingRefused, NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import instances, pci_devices
from berth.compute.heal import port_query
from berth.compute.objects.build import PortEntry
from berth.compute.objects.request_spec import PortRequest
from berth.compute.rpc import InterfaceRefused
from berth.compute.scheduler.placement_query import MappingError, QueryError, port_allocations

LOG = logging.getLogger(__name__)

ATTACH = "attach_interface"
DETACH = "detach_interface"
# Event names are Nova's (the compute manager's methods).
ATTACH_EVENT = "compute_attach_interface"
DETACH_EVENT = "compute_detach_interface"

# Candidates asked for one port: enough to find a physical function with a free VF.
CANDIDATES = 20
# Times an allocation write is tried again after losing a race.
WRITES = 3


@dataclass(frozen=True)
class Host:
    """What an interface change needs of the host agent."""

    name: str
    node_id: int
    node_uuid: str
    db: Database
    placement: PlacementClient
    network: NetworkClient
    # The physical function named by one of these providers (SR-IOV), or None.
    pf_of: Callable[[list[str]], str | None]
    # The VNIC types that take a virtual function (the agent's one definition).
    sriov_vnic_types: Collection[str]


@dataclass
class _Undo:
    """What to give back if a later step fails, newest first."""

    steps: list[tuple[str, Callable[[], None]]] = field(default_factory=list)

    def push(self, what: str, step: Callable[[], None]) -> None:
        self.steps.append((what, step))

    def undo_newest(self) -> None:
        """Give back what the newest step took, now (a retry takes it again)."""
        _what, step = self.steps.pop()
        step()

    def run(self, instance_uuid: str) -> None:
        for what, step in reversed(self.steps):
            try:
                step()
            except Exception:
                LOG.exception("%s: could not %s; an audit will find it", instance_uuid, what)


# -- attach --------------------------------------------------------------------------------------


def attach(
    host: Host,
    instance_uuid: str,
    port_id: str | None,
    network_id: str | None,
    fixed_ip: str | None,
) -> PortEntry:
    instance = _instance(host, instance_uuid)
    with host.db.write() as conn:
        event = actions.step_started(conn, instance_uuid, ATTACH, ATTACH_EVENT, host.name)
    undo = _Undo()
    try:
        port, entry = _port(host, instance, port_id, network_id, fixed_ip, undo)
        request = PortRequest(
            port["id"],
            resource_request=port.get("resource_request") or {},
            vnic_type=entry.vnic_type,
        )
        mapping = _resources(host, instance, request, undo)
        try:
            host.network.bind(entry.port_id, host.name, mapping or None)
        except BindingRefused as exc:
            raise InterfaceRefused(
                400, f"Port {entry.port_id} cannot be bound here: {exc}"
            ) from exc
        entry = refreshed(host.network, entry)
        with host.db.write() as conn:
            row = instances.get(conn, instance_uuid, include_deleted=False)
            if row is None:
                raise InterfaceRefused(404, f"Instance {instance_uuid} could not be found.")
            network_info = [*row["network_info"], entry.to_json()]
            instances.update(conn, instance_uuid, {"network_info": network_info})
            pci_devices.allocate(conn, instance_uuid, host.node_id)
            actions.step_ended(conn, event, actions.SUCCESS)
    except Exception as exc:
        undo.run(instance_uuid)
        with host.db.write() as conn:
            actions.step_ended(conn, event, actions.ERROR, str(exc))
        raise
    return entry


def _instance(host: Host, instance_uuid: str) -> Mapping[str, Any]:
    with host.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["host"] != host.name:
        raise InterfaceRefused(404, f"Instance {instance_uuid} could not be found on {host.name}.")
    return row


def _port(
    host: Host,
    instance: Mapping[str, Any],
    port_id: str | None,
    network_id: str | None,
    fixed_ip: str | None,
    undo: _Undo,
) -> tuple[dict[str, Any], PortEntry]:
    """The port to attach, the server's now (``device_id``): the user's, or one made for it."""
    network = host.network
    uuid = instance["uuid"]
    owner = f"compute:{instance['availability_zone'] or 'nova'}"
    if port_id is not None:
        port = _known(lambda: network.port(port_id), f"Port {port_id} could not be found.")
        if port["device_id"]:
            raise InterfaceRefused(409, f"Port {port_id} is still in use.")
        if port["project_id"] != instance["project_id"]:
            raise InterfaceRefused(
                400, f"Port {port_id} not usable for instance {uuid}: it is another project's."
            )
        port = network.update_port(port_id, device_id=uuid, device_owner=owner)
        entry = _entry(port, created=False)
    else:
        assert network_id is not None, "the API sends a port or a network"
        _known(lambda: network.network(network_id), f"Network {network_id} could not be found.")
        attributes: dict[str, Any] = {"device_id": uuid, "device_owner": owner}
        if fixed_ip is not None:
            attributes["fixed_ips"] = [{"ip_address": fixed_ip}]
        try:
            port = network.create_port(network_id, instance["project_id"], **attributes)
        except NetworkError as exc:
            if exc.status >= 500:
                raise
            raise InterfaceRefused(409 if exc.status == 409 else 400, str(exc)) from exc
        entry = _entry(port, created=True)
    undo.push("give back the port", lambda: cleanup.release_ports(network, [entry]))
    return port, entry


def _known(get: Callable[[], dict[str, Any]], missing: str) -> dict[str, Any]:
    try:
        return get()
    except NetworkError as exc:
        if exc.status == 404:
            raise InterfaceRefused(404, missing) from exc
        raise


def _entry(port: Mapping[str, Any], created: bool) -> PortEntry:
    return PortEntry(
        port_id=port["id"],
        network_id=port["network_id"],
        mac_address=port["mac_address"],
        fixed_ips=tuple(port["fixed_ips"]),
        vnic_type=port.get("binding:vnic_type", "normal"),
        created_by_compute=created,
    )


def refreshed(network: NetworkClient, entry: PortEntry) -> PortEntry:
    """The entry with the port's addresses once bound (a deferred one comes with the binding)."""
    port = network.port(entry.port_id)
    name = network.network(port["network_id"])["name"]
    return PortEntry(
        port_id=entry.port_id,
        network_id=entry.network_id,
        mac_address=entry.mac_address,
        fixed_ips=tuple(port["fixed_ips"]),
        network_name=name,
        vnic_type=entry.vnic_type,
        created_by_compute=entry.created_by_compute,
    )


def _resources(
    host: Host, instance: Mapping[str, Any], request: PortRequest, undo: _Undo
) -> dict[str, str]:
    """Take what the port needs on this host (its groups' resources, an SR-IOV port's virtual
    function); the mapping of its groups to providers (empty without a resource request)."""
    uuid = instance["uuid"]
    sriov = request.vnic_type in host.sriov_vnic_types
    groups = request.request_groups
    if not groups:
        if sriov:
            _take_vf(host, uuid, None, undo)
        return {}
    try:
        query = port_query([request], host.node_uuid, limit=CANDIDATES)
    except QueryError as exc:
        raise InterfaceRefused(400, f"Port {request.port_id}'s resource request: {exc}") from exc
    for _ in range(WRITES):
        mapping = _candidate(host, uuid, request, query, sriov, undo)
        grow = functools.partial(interface_allocations.grown, groups=groups, mapping=mapping)
        if _rewrite(host, instance, grow, 1):
            undo.push(
                "take the port's resources off the allocation",
                functools.partial(_give_back, host, instance, groups, mapping),
            )
            return mapping
        # Another writer took the capacity or moved the consumer: ask again.
        if sriov:
            undo.undo_newest()  # its virtual function
    raise InterfaceRefused(
        409, f"The allocation of instance {uuid} kept changing; try the attach again."
    )


def _candidate(
    host: Host,
    uuid: str,
    request: PortRequest,
    query: list[tuple[str, str]],
    sriov: bool,
    undo: _Undo,
) -> dict[str, str]:
    """The first candidate's mapping for the port (for an SR-IOV port, the first whose
    physical function has a free virtual function, which is then claimed)."""
    answer = host.placement.allocation_candidates(query)
    found = answer["allocation_requests"]
    if not found:
        raise InterfaceRefused(
            400,
            f"Failed to allocate additional resources to instance {uuid}: no provider of host "
            f"{host.name} can serve the resource request of port {request.port_id}.",
        )
    for candidate in found:
        try:
            mapping = port_allocations([request], candidate["mappings"])[request.port_id]
        except (MappingError, KeyError):
            continue
        if not sriov or _take_vf(host, uuid, host.pf_of(sorted(set(mapping.values()))), undo):
            return mapping
    raise InterfaceRefused(
        400,
        f"Failed to allocate additional resources to instance {uuid}: no free virtual function "
        f"on host {host.name} for port {request.port_id}.",
    )


def _take_vf(host: Host, uuid: str, pf: str | None, undo: _Undo) -> bool:
    """Claim a virtual function on ``pf`` (or on any physical function with one free)."""
    with host.db.write() as conn:
        names = (
            [pf]
            if pf
            else sorted(n for n, f in pci_devices.free_vfs(conn, host.node_id).items() if f)
        )
        for name in names:
            got = pci_devices.claim_vfs(conn, host.node_id, name, 1, uuid)
            if got:
                undo.push(
                    "release the virtual function", functools.partial(_release_vfs, host, uuid, got)
                )
                return True
    if pf is None:
        raise InterfaceRefused(400, f"No free virtual function on host {host.name}.")
    return False


def _release_vfs(host: Host, uuid: str, addresses: list[str]) -> None:
    with host.db.write() as conn:
        pci_devices.release_vfs(conn, host.node_id, uuid, addresses)


def _rewrite(
    host: Host,
    instance: Mapping[str, Any],
    change: Callable[[interface_allocations.Amounts], dict[str, dict[str, int]]],
    tries: int,
) -> bool:
    """Write ``change(held)`` as the server's allocation under its consumer generation, reading
    again after a lost race (``tries`` times in all); False when every write lost."""
    uuid = instance["uuid"]
    for _ in range(tries):
        current = host.placement.allocations(uuid)
        held = {rp: dict(a["resources"]) for rp, a in current["allocations"].items()}
        wanted = change(held)
        if wanted == held:
            return True
        if not wanted:
            host.placement.release(uuid)
            return True
        body = {rp: {"resources": amounts} for rp, amounts in wanted.items()}
        if host.placement.claim(
            uuid,
            body,
            current.get("project_id") or instance["project_id"],
            current.get("user_id") or instance["user_id"],
            current.get("consumer_generation") if held else None,
        ):
            return True
    return False


def _give_back(
    host: Host,
    instance: Mapping[str, Any],
    groups: tuple[Mapping[str, Any], ...],
    mapping: Mapping[str, str],
) -> None:
    shrink = functools.partial(interface_allocations.shrunk, groups=groups, mapping=mapping)
    if not _rewrite(host, instance, shrink, WRITES + 2):
        raise RuntimeError(f"the allocation of {instance['uuid']} kept changing")


# -- detach --------------------------------------------------------------------------------------


def detach(host: Host, instance_uuid: str, port_id: str) -> None:
    instance = _instance(host, instance_uuid)
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    entry = next((e for e in entries if e.port_id == port_id), None)
    if entry is None:
        raise InterfaceRefused(404, f"Port {port_id} is not attached to instance {instance_uuid}.")
    with host.db.write() as conn:
        event = actions.step_started(conn, instance_uuid, DETACH, DETACH_EVENT, host.name)
    try:
        _detach(host, instance, entry)
    except Exception as exc:
        with host.db.write() as conn:
            actions.step_ended(conn, event, actions.ERROR, str(exc))
        raise
    with host.db.write() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
        if row is not None:
            left = [e for e in row["network_info"] if e.get("port_id") != port_id]
            instances.update(conn, instance_uuid, {"network_info": left})
        actions.step_ended(conn, event, actions.SUCCESS)


def _detach(host: Host, instance: Mapping[str, Any], entry: PortEntry) -> None:
    """Give back what the port held: its groups' part of the allocation, its virtual function,
    the port itself (deleted if made for the server, else unbound and handed back)."""
    uuid = instance["uuid"]
    try:
        port: dict[str, Any] | None = host.network.port(entry.port_id)
    except NetworkError as exc:
        if exc.status != 404:
            raise
        port = None  # gone already: its bindings and the allocation's part are what is left
    mapping: dict[str, str] = {}
    if port is not None:
        groups = tuple((port.get("resource_request") or {}).get("request_groups") or ())
        mapping = dict((port.get("binding:profile") or {}).get("allocation") or {})
        if groups and mapping:
            _give_back(host, instance, groups, mapping)
    if entry.vnic_type in host.sriov_vnic_types:
        pf = host.pf_of(sorted(set(mapping.values()))) if mapping else None
        with host.db.write() as conn:
            held = pci_devices.held_vfs(conn, host.node_id, uuid, pf) or pci_devices.held_vfs(
                conn, host.node_id, uuid
            )
            pci_devices.release_vfs(conn, host.node_id, uuid, held[:1])
    cleanup.release_ports(host.network, [entry])

"""Starting host agents: many hosts registered at once, as cheaply as a few.

A fleet's hosts each write their service, compute node and devices to their cell's database and
report their compute node to Placement. Done host by host that is two write transactions and
three or four Placement requests each; here it is one write transaction per cell database, one
Placement listing, and per host only what is new or changed: a host whose provider Placement
still shows at the generation recorded when it last reported the same thing (nobody wrote to it
since) is not read again, so a restart of a fleet costs little more than the listing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.engine import Connection, RowMapping

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import compute_nodes, pci_devices, services
from berth.compute.host import evacuate

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

BINARY, TOPIC = "nova-compute", "compute"


def start_hosts(agents: Sequence[HostAgent], reported: Callable[[], None] = lambda: None) -> None:
    """Register every agent's host and report it to Placement; ``reported`` once per host."""
    now = utcnow()
    for db, alike in _by(agents, lambda agent: agent.db):
        with db.write() as conn:
            nodes = _record(conn, alike, now)
        recorded = {node["uuid"]: compute_nodes.reported(node) for node in nodes}
        fingerprints: dict[str, tuple[str, int]] = {}
        for placement, same in _by(alike, lambda agent: agent.placement):
            providers = {agent.node_uuid: agent.provider() for agent in same}
            generations = placement.report_providers(list(providers.values()), recorded, reported)
            fingerprints |= {u: (providers[u].fingerprint(), g) for u, g in generations.items()}
        changed = {u: seen for u, seen in fingerprints.items() if recorded.get(u) != seen}
        if changed:
            with db.write() as conn:
                compute_nodes.record_reported(conn, changed)
        with db.read() as conn:
            evacuated = evacuate.evacuated_from(conn)
        # Back after a failure: the servers evacuated meanwhile leave their hosts for good.
        for agent in alike:
            if agent.host in evacuated:
                evacuate.clean_up_evacuated(agent, evacuated[agent.host])


def _record(conn: Connection, agents: Sequence[HostAgent], now: dt.datetime) -> list[RowMapping]:
    """Write the agents' services (with a heartbeat), compute nodes and devices, reading what is
    there once for all of them and writing only what differs; their nodes."""
    service_of = {s["host"]: s for s in services.list_services(conn, binary=BINARY)}
    # A fleet's first start: every new service, then every new node, in one statement each.
    missing = list(dict.fromkeys(a.host for a in agents if a.host not in service_of))
    if missing and services.create_many(conn, missing, BINARY, TOPIC):
        service_of = {s["host"]: s for s in services.list_services(conn, binary=BINARY)}
    node_of = {n["hypervisor_hostname"]: n for n in compute_nodes.list_nodes(conn)}
    new = {
        agent.host: (service_of[agent.host]["id"], agent.node_values())
        for agent in agents
        if agent.host not in node_of and agent.host in service_of
    }
    if new and compute_nodes.create_many(conn, new):
        node_of = {n["hypervisor_hostname"]: n for n in compute_nodes.list_nodes(conn)}
    with_devices = pci_devices.nodes_with_devices(conn)
    nodes = []
    for agent in agents:
        service = service_of.get(agent.host) or services.get_or_create(
            conn, agent.host, BINARY, TOPIC
        )
        values = agent.node_values()
        node = node_of.get(agent.host)
        if node is None or any(
            node[key] != value
            for key, value in {**values, "service_id": service["id"], "host": agent.host}.items()
        ):
            node = compute_nodes.upsert(conn, service["id"], agent.host, agent.host, values)
        if agent.resources.pci or node["id"] in with_devices:
            pci_devices.sync_host(conn, node["id"], agent.resources.pci)
        agent.registered(service["id"], node)
        nodes.append(node)
    services.heartbeat_all(conn, [agent.service_id for agent in agents], now)
    return nodes


Shared = TypeVar("Shared", Database, PlacementClient)


def _by(
    agents: Sequence[HostAgent], key: Callable[[HostAgent], Shared]
) -> list[tuple[Shared, list[HostAgent]]]:
    """The agents grouped by what ``key`` answers (compared by identity), in first-seen order."""
    groups: dict[int, tuple[Shared, list[HostAgent]]] = {}
    for agent in agents:
        found = key(agent)
        groups.setdefault(id(found), (found, []))[1].append(agent)
    return list(groups.values())

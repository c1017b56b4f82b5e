"""Host agents register many hosts at once (``registration.start_hosts``) against a real
Placement in process: one write transaction per cell database, one listing, and per host only
what is new or changed since it last reported."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import compute_nodes, services
from berth.compute.host import registration
from berth.compute.host.agent import HostAgent, HostResources
from berth.compute.host.driver import SimulatedDriver
from berth.compute.service import ComputeService

HOSTS = ("cn1", "cn2", "cn3")
RESOURCES = HostResources(vcpus=16, memory_mb=65536, disk_gb=500, traits=("CUSTOM_FAST",))


@pytest.fixture
def calls(placement: httpx.Client, compute_service: ComputeService) -> Iterator[list[str]]:
    """Every request the compute service's Placement client sends, as ``METHOD path``."""
    seen: list[str] = []
    client = compute_service.placement.client
    hook = lambda request: seen.append(f"{request.method} {request.url.path}")  # noqa: E731
    client.event_hooks["request"].append(hook)
    yield seen
    client.event_hooks["request"].remove(hook)


def _agents(
    cell_db: Database, placement: PlacementClient, resources: dict[str, HostResources] | None = None
) -> list[HostAgent]:
    """A fresh agent object per host, as a restarted process makes them."""
    # Registering needs neither the network service nor a cell conductor.
    unused: Any = None
    chosen = resources or {}
    return [
        HostAgent(
            host,
            chosen.get(host, RESOURCES),
            cell_db,
            placement,
            unused,
            SimulatedDriver(host, 0.0, ()),
            unused,
        )
        for host in HOSTS
    ]


def _reads(calls: list[str]) -> list[str]:
    """Reads of single providers (the listing is ``GET /resource_providers``)."""
    return [c for c in calls if c.startswith("GET /resource_providers/")]


@pytest.mark.parametrize(
    ("roles", "reshaper"), [("admin,service", True), ("admin", False)], ids=["service", "admin"]
)
def test_a_fleet_registers_without_reading_its_new_providers(
    placement: httpx.Client,
    compute_service: ComputeService,
    cell_db: Database,
    calls: list[str],
    roles: str,
    reshaper: bool,
) -> None:
    # Placement gives the reshaper to the service role only: without it, one PUT each.
    compute_service.placement.client.headers["x-roles"] = roles
    done: list[None] = []
    agents = _agents(cell_db, compute_service.placement)
    registration.start_hosts(agents, lambda: done.append(None))

    assert len(done) == len(HOSTS)
    assert _reads(calls) == []
    puts = [c for c in calls if c.startswith("PUT") and c.endswith("/inventories")]
    assert calls.count("POST /reshaper") == 1
    assert calls.count("PUT /traits/CUSTOM_FAST") == 1  # once for the fleet, not per host
    assert len(puts) == (0 if reshaper else len(HOSTS))
    with cell_db.read() as conn:
        nodes = {n["host"]: n for n in compute_nodes.list_nodes(conn)}
        up = {s["host"] for s in services.list_services(conn) if s["last_seen_up"] is not None}
    assert up == set(HOSTS)
    for agent in agents:
        node = nodes[agent.host]
        assert node["uuid"] == agent.node_uuid
        shown = placement.get(f"/resource_providers/{agent.node_uuid}").json()
        assert shown["name"] == agent.host
        inventories = placement.get(f"/resource_providers/{agent.node_uuid}/inventories").json()
        assert inventories["inventories"]["VCPU"]["total"] == 16
        assert inventories["inventories"]["VCPU"]["allocation_ratio"] == 4.0
        assert inventories["inventories"]["MEMORY_MB"]["reserved"] == 512
        traits = placement.get(f"/resource_providers/{agent.node_uuid}/traits").json()["traits"]
        assert set(traits) == {"COMPUTE_NODE", "CUSTOM_FAST"}
        # What was recorded is what Placement shows now.
        assert compute_nodes.reported(node) == (agent.provider().fingerprint(), shown["generation"])


def test_a_restart_reads_only_providers_written_since_or_reported_otherwise(
    placement: httpx.Client, compute_service: ComputeService, cell_db: Database, calls: list[str]
) -> None:
    registration.start_hosts(_agents(cell_db, compute_service.placement))

    # Unchanged: the restart is one listing, and writes nothing to Placement.
    calls.clear()
    agents = _agents(cell_db, compute_service.placement)
    registration.start_hosts(agents)
    assert calls == ["GET /resource_providers"]
    cn1, cn2, cn3 = (agent.node_uuid for agent in agents)

    # An operator's trait on cn2 moves its generation on; cn3 reports more memory.
    assert placement.put("/traits/CUSTOM_OPERATOR").status_code == 201
    current = placement.get(f"/resource_providers/{cn2}/traits").json()
    current["traits"].append("CUSTOM_OPERATOR")
    assert placement.put(f"/resource_providers/{cn2}/traits", json=current).status_code == 200
    bigger = {
        "cn3": HostResources(vcpus=16, memory_mb=131072, disk_gb=500, traits=("CUSTOM_FAST",))
    }
    calls.clear()
    registration.start_hosts(_agents(cell_db, compute_service.placement, bigger))
    assert {c.split("/")[2] for c in _reads(calls)} == {cn2, cn3}
    assert cn1 not in "".join(calls)
    traits = placement.get(f"/resource_providers/{cn2}/traits").json()["traits"]
    assert set(traits) == {"COMPUTE_NODE", "CUSTOM_FAST", "CUSTOM_OPERATOR"}
    inventories = placement.get(f"/resource_providers/{cn3}/inventories").json()["inventories"]
    assert inventories["MEMORY_MB"]["total"] == 131072

    # And what those reads found is recorded: the next restart reads nothing again.
    calls.clear()
    registration.start_hosts(_agents(cell_db, compute_service.placement, bigger))
    assert calls == ["GET /resource_providers"]


def test_a_provider_deleted_behind_the_hosts_back_is_made_again(
    placement: httpx.Client, compute_service: ComputeService, cell_db: Database
) -> None:
    agents = _agents(cell_db, compute_service.placement)
    registration.start_hosts(agents)
    gone = agents[0].node_uuid
    assert placement.delete(f"/resource_providers/{gone}").status_code == 204

    registration.start_hosts(_agents(cell_db, compute_service.placement))
    inventories = placement.get(f"/resource_providers/{gone}/inventories").json()["inventories"]
    assert inventories["DISK_GB"]["total"] == 500

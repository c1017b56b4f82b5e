"""Simulated agents report their state over the Networking API and keep themselves alive."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest

from berth.common.timeutils import utcnow
from berth.network.service import NetworkService
from berth.network.sim_agent import SimulatedAgent
from berth.network.store.schema import agents


def test_a_simulated_agent_registers_and_its_heartbeat_revives_it(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    config = {"bridge_mappings": {"public": "br-ex"},
              "resource_provider_bandwidths": {"br-ex": {"egress": 1000, "ingress": 1000}}}  # fmt: skip
    agent = SimulatedAgent(network_client, "cn1", "Open vSwitch agent", config)
    agent.report()
    (shown,) = network_client.get("/v2.0/agents", params={"host": "cn1"}).json()["agents"]
    assert (shown["alive"], shown["binary"], shown["configurations"]) == (
        True, "neutron-openvswitch-agent", config,
    )  # fmt: skip
    with network_service.db.write() as conn:
        conn.execute(agents.update().values(heartbeat_at=utcnow() - dt.timedelta(hours=1)))
    (dead,) = network_client.get("/v2.0/agents", params={"host": "cn1"}).json()["agents"]
    assert dead["alive"] is False
    agent.report()
    (alive,) = network_client.get("/v2.0/agents", params={"host": "cn1"}).json()["agents"]
    assert alive["alive"] is True and alive["id"] == shown["id"]


def test_a_refused_report_says_why(network_client: httpx.Client) -> None:
    agent = SimulatedAgent(network_client, "cn1", "Open vSwitch agent", {"bridge_mappings": []})
    with pytest.raises(RuntimeError, match="state report refused: 400"):
        agent.report()

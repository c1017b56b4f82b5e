"""/v2.0/agents over HTTP, with the state reports agents send, on every database backend."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from berth.common.timeutils import utcnow
from berth.network import agents
from berth.network.service import NetworkService
from berth.network.store.schema import agents as agents_table
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error

MISSING = "8c1a1f30-6b7a-4c55-9a39-2f1f0c7d7f11"
OVS_CONFIG = {
    "bridge_mappings": {"physnet1": "br-ex"},
    "resource_provider_bandwidths": {"br-ex": {"egress": 10000, "ingress": 20000}},
    "resource_provider_packet_processing_without_direction": 100000,
    "tunnel_types": ["vxlan"],
}
SRIOV_CONFIG = {
    "device_mappings": {"physnet2": ["ens1f0", "ens1f1"]},
    "resource_provider_bandwidths": {"ens1f0": {"egress": 25000000, "ingress": None}},
    "num_virtual_functions": {"ens1f0": 8},
}


def _report(client: httpx.Client, host: str = "compute1", **agent: Any) -> httpx.Response:
    body = {
        "agent_type": "Open vSwitch agent",
        "host": host,
        "binary": "neutron-openvswitch-agent",
        "topic": "N/A",
        "configurations": OVS_CONFIG,
        **agent,
    }
    return client.post("/v2.0/agents", json={"agent": body})


def _agent(client: httpx.Client, host: str = "compute1", **agent: Any) -> dict[str, Any]:
    answer = _report(client, host, **agent)
    assert answer.status_code == 201, answer.text
    return answer.json()["agent"]  # type: ignore[no-any-return]


class _Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


def test_a_first_report_makes_the_agent_and_later_ones_refresh_it(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    woken = _Counter()
    network_service.on_change.append(woken)
    made = _agent(network_client, availability_zone="nova")
    assert woken.calls == 1
    assert (made["agent_type"], made["host"], made["binary"], made["topic"]) == (
        "Open vSwitch agent", "compute1", "neutron-openvswitch-agent", "N/A",
    )  # fmt: skip
    assert made["alive"] is True and made["admin_state_up"] is True
    assert made["configurations"] == OVS_CONFIG and made["availability_zone"] == "nova"
    assert made["resources_synced"] is None and made["resource_versions"] == {}
    assert made["description"] is None
    dt.datetime.strptime(made["heartbeat_timestamp"], "%Y-%m-%d %H:%M:%S")
    assert made["started_at"] == made["created_at"]
    _mark(network_service, made["id"], heartbeat_at=utcnow() - dt.timedelta(hours=1),
          resources_synced=True)  # fmt: skip
    same = _report(network_client)
    assert same.status_code == 200, same.text
    refreshed = same.json()["agent"]
    assert refreshed["id"] == made["id"] and refreshed["alive"] is True
    assert refreshed["resources_synced"] is True and refreshed["availability_zone"] is None
    assert woken.calls == 2
    changed = {**OVS_CONFIG, "tunnel_types": ["vxlan", "geneve"]}
    again = _report(network_client, configurations=changed).json()["agent"]
    assert again["configurations"] == changed and again["resources_synced"] is None
    sriov = _agent(network_client, agent_type="NIC Switch agent", configurations=SRIOV_CONFIG,
                   binary="neutron-sriov-nic-agent")  # fmt: skip
    assert sriov["id"] != made["id"] and sriov["configurations"] == SRIOV_CONFIG
    assert len(network_client.get("/v2.0/agents").json()["agents"]) == 2


def test_an_agent_without_a_recent_heartbeat_is_dead(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    down_time = network_service.settings.agent_down_time
    quiet = _agent(network_client, host="quiet")
    recent = _agent(network_client, host="recent")
    _mark(network_service, quiet["id"], heartbeat_at=utcnow() - dt.timedelta(seconds=down_time + 5))
    _mark(
        network_service, recent["id"], heartbeat_at=utcnow() - dt.timedelta(seconds=down_time - 5)
    )
    shown = network_client.get(f"/v2.0/agents/{quiet['id']}").json()["agent"]
    assert shown["alive"] is False
    assert network_client.get(f"/v2.0/agents/{recent['id']}").json()["agent"]["alive"] is True
    dead = network_client.get("/v2.0/agents", params={"alive": "false"}).json()["agents"]
    assert [a["host"] for a in dead] == ["quiet"]
    assert _report(network_client, host="quiet").json()["agent"]["alive"] is True


def test_lists_filter_sort_and_select_fields(network_client: httpx.Client) -> None:
    ovs = _agent(network_client, host="b")
    _agent(network_client, host="a")
    _agent(network_client, host="a", agent_type="NIC Switch agent", configurations=SRIOV_CONFIG)
    network_client.put(f"/v2.0/agents/{ovs['id']}", json={"agent": {"admin_state_up": False}})

    def hosts(**params: Any) -> list[tuple[str, str]]:
        listed = network_client.get("/v2.0/agents", params=params).json()["agents"]
        return [(a["host"], a["agent_type"]) for a in listed]

    assert sorted(hosts(host="a")) == [("a", "NIC Switch agent"), ("a", "Open vSwitch agent")]
    assert hosts(agent_type="NIC Switch agent") == [("a", "NIC Switch agent")]
    assert hosts(admin_state_up="false") == [("b", "Open vSwitch agent")]
    assert len(hosts(alive="true")) == 3 and hosts(alive="false") == []
    assert hosts(binary="nope") == []
    ordered = network_client.get(
        "/v2.0/agents", params=[("sort_key", "host"), ("sort_dir", "desc"), ("fields", "host")]
    ).json()["agents"]
    assert ordered[0] == {"host": "b"}
    neutron_error(network_client.get("/v2.0/agents", params={"colour": "red"}), 400, "BadRequest")
    fields = network_client.get(f"/v2.0/agents/{ovs['id']}", params={"fields": "alive"})
    assert fields.json() == {"agent": {"alive": True}}


def test_only_admin_state_and_description_can_be_updated(network_client: httpx.Client) -> None:
    made = _agent(network_client)
    path = f"/v2.0/agents/{made['id']}"
    updated = network_client.put(
        path, json={"agent": {"admin_state_up": False, "description": "draining"}}
    )
    assert updated.status_code == 200, updated.text
    agent = updated.json()["agent"]
    assert (agent["admin_state_up"], agent["description"]) == (False, "draining")
    neutron_error(
        network_client.put(path, json={"agent": {"host": "elsewhere"}}), 400, "BadRequest"
    )
    bad = network_client.put(path, json={"agent": {"admin_state_up": "sometimes"}})
    neutron_error(bad, 400, "InvalidInput")
    again = _report(network_client).json()["agent"]
    assert (again["admin_state_up"], again["description"]) == (False, "draining")


def test_agents_are_deleted(network_service: NetworkService, network_client: httpx.Client) -> None:
    made = _agent(network_client)
    woken = _Counter()
    network_service.on_change.append(woken)
    path = f"/v2.0/agents/{made['id']}"
    assert network_client.delete(path).status_code == 204
    assert woken.calls == 1
    neutron_error(network_client.get(path), 404, "AgentNotFound")
    neutron_error(network_client.delete(path), 404, "AgentNotFound")
    neutron_error(
        network_client.put(path, json={"agent": {"description": "x"}}), 404, "AgentNotFound"
    )
    neutron_error(network_client.get("/v2.0/agents/not-a-uuid"), 404, "AgentNotFound")
    assert _report(network_client).status_code == 201


def test_agents_are_the_operators_alone(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    made = _agent(network_client)
    path = f"/v2.0/agents/{made['id']}"
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        # A listing is filtered by the admin-only rule (upstream's way): empty, not refused.
        listed = alice.get("/v2.0/agents")
        assert listed.status_code == 200 and listed.json() == {"agents": []}, listed.text
    with network_client_for(network_service, "carol:alice", roles="reader") as reader:
        assert reader.get("/v2.0/agents").json() == {"agents": []}
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        neutron_error(alice.get(path), 403, "NotAuthorized")
        neutron_error(alice.get(f"/v2.0/agents/{MISSING}"), 403, "NotAuthorized")
        neutron_error(alice.put(path, json={"agent": {"description": "x"}}), 403, "NotAuthorized")
        neutron_error(alice.delete(path), 403, "NotAuthorized")
        neutron_error(_report(alice), 403, "NotAuthorized")
    with network_client_for(network_service, "nova") as service:
        service.headers["x-roles"] = "service"
        assert _report(service, host="compute2").status_code == 201
        assert len(service.get("/v2.0/agents").json()["agents"]) == 2


@pytest.mark.parametrize(
    ("change", "status", "error", "naming"),
    [
        ({"agent_type": "DHCP agent"}, 400, "InvalidInput", "agent_type"),
        ({"host": ""}, 400, "InvalidInput", "host"),
        ({"host": None}, 400, "InvalidInput", "host"),
        ({"binary": 5}, 400, "InvalidInput", "binary"),
        ({"topic": None}, 400, "InvalidInput", "topic"),
        ({"configurations": None}, 400, "InvalidInput", "configurations"),
        ({"configurations": []}, 400, "InvalidInput", "configurations"),
        ({"colour": "red"}, 400, "BadRequest", "colour"),
        ({"configurations": {"bridge_mappings": ["br-ex"]}}, 400, "InvalidInput",
         "bridge_mappings"),
        ({"configurations": {**OVS_CONFIG, "resource_provider_bandwidths": {"br-x": {}}}},
         400, "InvalidInput", "resource_provider_bandwidths.br-x"),
        ({"configurations": {**OVS_CONFIG, "tunnel_types": "vxlan"}}, 400, "InvalidInput",
         "tunnel_types"),
        ({"agent_type": "NIC Switch agent",
          "configurations": {**SRIOV_CONFIG, "num_virtual_functions": {"ens1f0": -1}}},
         400, "InvalidInput", "num_virtual_functions.ens1f0"),
    ],
)  # fmt: skip
def test_bad_reports_are_refused_naming_what_is_wrong(
    network_client: httpx.Client, change: dict[str, Any], status: int, error: str, naming: str
) -> None:
    message = neutron_error(_report(network_client, **change), status, error)
    assert naming in message
    assert network_client.get("/v2.0/agents").json()["agents"] == []


def test_a_report_without_configurations_is_refused(network_client: httpx.Client) -> None:
    answer = network_client.post(
        "/v2.0/agents",
        json={"agent": {"agent_type": "Open vSwitch agent", "host": "h", "binary": "b",
                        "topic": "t"}},
    )  # fmt: skip
    assert "configurations" in neutron_error(answer, 400, "BadRequest")
    neutron_error(network_client.post("/v2.0/agents", json={"agents": []}), 400, "BadRequest")


def test_in_process_agents_report_directly(network_service: NetworkService) -> None:
    with network_service.db.write() as conn:
        first = agents.report(conn, agents.SRIOV, "h1", "sriov", "N/A", SRIOV_CONFIG)
        again = agents.report(conn, agents.SRIOV, "h1", "sriov", "N/A", SRIOV_CONFIG, "az1")
    assert first[1] is True and again == (first[0], False)
    with network_service.db.read() as conn:
        row = agents.get_agent(conn, first[0])
    assert row["availability_zone"] == "az1" and row["configurations"] == SRIOV_CONFIG


def _mark(service: NetworkService, agent_id: str, **values: Any) -> None:
    with service.db.write() as conn:
        conn.execute(agents_table.update().where(agents_table.c.id == agent_id).values(**values))

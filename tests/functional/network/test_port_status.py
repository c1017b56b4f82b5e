"""A port's status follows its active binding as upstream's L2 agent makes it, and activating the
binding that is active already is upstream's 409."""

from __future__ import annotations

import datetime as dt
from typing import Any

import httpx
import pytest

from berth.common.timeutils import utcnow
from berth.network.service import NetworkService
from berth.network.store.schema import agents
from tests.functional.network.calls import neutron_error, post_made

OVS = "Open vSwitch agent"


@pytest.fixture
def network(network_client: httpx.Client) -> dict[str, Any]:
    """A flat network on physnet "public" with a subnet, and an OVS agent on cn1 and cn2."""
    net = post_made(
        network_client, "/v2.0/networks", "network",
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )  # fmt: skip
    post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=4, cidr="10.0.0.0/28",
    )  # fmt: skip
    for host in ("cn1", "cn2"):
        body = {"agent_type": OVS, "host": host, "binary": "sim", "topic": "N/A",
                "configurations": {"bridge_mappings": {"public": "br-ex"}}}  # fmt: skip
        assert network_client.post("/v2.0/agents", json={"agent": body}).is_success
    return net


def _port(client: httpx.Client, network: dict[str, Any], **body: Any) -> dict[str, Any]:
    return post_made(client, "/v2.0/ports", "port", network_id=network["id"], **body)


def _update(client: httpx.Client, port_id: str, **body: Any) -> dict[str, Any]:
    answer = client.put(f"/v2.0/ports/{port_id}", json={"port": body})
    assert answer.status_code == 200, answer.text
    return answer.json()["port"]  # type: ignore[no-any-return]


def _status(client: httpx.Client, port_id: str) -> tuple[str, str]:
    port = client.get(f"/v2.0/ports/{port_id}").json()["port"]
    return port["binding:host_id"], port["status"]


def test_activating_the_active_binding_is_a_conflict(
    network_client: httpx.Client, network: dict[str, Any]
) -> None:
    port = _port(network_client, network, **{"binding:host_id": "cn1"})
    again = network_client.put(f"/v2.0/ports/{port['id']}/bindings/cn1/activate")
    assert neutron_error(again, 409, "PortBindingAlreadyActive") == (
        f"Binding for port {port['id']} on host cn1 is already active."
    )
    assert _status(network_client, port["id"]) == ("cn1", "ACTIVE")
    listed = network_client.get(f"/v2.0/ports/{port['id']}/bindings").json()["bindings"]
    assert [(b["host"], b["status"]) for b in listed] == [("cn1", "ACTIVE")]
    # A host with no binding at all is still a 404, bound port or not.
    unbound = _port(network_client, network)
    for port_id in (port["id"], unbound["id"]):
        missing = network_client.put(f"/v2.0/ports/{port_id}/bindings/cn2/activate")
        assert neutron_error(missing, 404, "PortBindingNotFound") == (
            f"Binding for port {port_id} for host cn2 could not be found."
        )


def test_a_port_is_active_once_bound_to_a_host_with_a_live_agent(
    network_client: httpx.Client, network: dict[str, Any]
) -> None:
    port = _port(network_client, network)
    assert port["status"] == "DOWN"
    assert _update(network_client, port["id"], **{"binding:host_id": "cn1"})["status"] == "ACTIVE"
    assert _update(network_client, port["id"], **{"binding:host_id": ""})["status"] == "DOWN"
    # A binding made on an unbound port is its active one.
    made = network_client.post(
        f"/v2.0/ports/{port['id']}/bindings", json={"binding": {"host": "cn2"}}
    )
    assert made.status_code == 201, made.text
    assert made.json()["binding"]["status"] == "ACTIVE"
    assert _status(network_client, port["id"]) == ("cn2", "ACTIVE")
    # A move: the inactive binding on cn1 activated, the port active there at once.
    network_client.post(f"/v2.0/ports/{port['id']}/bindings", json={"binding": {"host": "cn1"}})
    assert _status(network_client, port["id"]) == ("cn2", "ACTIVE")
    activated = network_client.put(f"/v2.0/ports/{port['id']}/bindings/cn1/activate")
    assert activated.status_code == 200, activated.text
    assert _status(network_client, port["id"]) == ("cn1", "ACTIVE")


def test_an_administratively_down_port_stays_down_when_bound(
    network_client: httpx.Client, network: dict[str, Any]
) -> None:
    port = _port(network_client, network, admin_state_up=False, **{"binding:host_id": "cn1"})
    assert (port["binding:host_id"], port["status"]) == ("cn1", "DOWN")
    assert _update(network_client, port["id"], admin_state_up=True)["status"] == "ACTIVE"
    assert _update(network_client, port["id"], admin_state_up=False)["status"] == "DOWN"
    unbound = _port(network_client, network)
    # Unbound, no agent reports it up.
    assert _update(network_client, unbound["id"], admin_state_up=True)["status"] == "DOWN"


def test_a_host_whose_agent_is_dead_does_not_bind_and_the_port_stays_down(
    network_service: NetworkService, network_client: httpx.Client, network: dict[str, Any]
) -> None:
    with network_service.db.write() as conn:
        conn.execute(
            agents.update()
            .where(agents.c.host == "cn2")
            .values(heartbeat_at=utcnow() - dt.timedelta(hours=1))
        )
    port = _port(network_client, network)
    refused = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "cn2"}}
    )
    assert "agent-dead" in neutron_error(refused, 409, "PortBindingError")
    assert _status(network_client, port["id"]) == ("", "DOWN")

"""A bound port's QoS change rewrites its server's allocation in a real Placement, in process.

cn1 (compute node)
└── cn1:Open vSwitch agent          NET_PACKET_RATE_KILOPACKET_PER_SEC 1000
    └── cn1:Open vSwitch agent:br-ex  NET_BW_EGR_KILOBIT_PER_SEC 10000 (physnet public)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.network import bound_requests
from berth.network.placement_allocations import PlacementAllocations
from berth.network.placement_sync import PlacementSync
from berth.network.reporter import PlacementReporter
from berth.network.reporting import provider_uuid
from berth.network.service import NetworkService
from berth.network.store import ports as port_store
from berth.placement.service import PlacementService
from tests.conftest import network_client_for, wsgi_client
from tests.functional.network.calls import post_made

OVS = "Open vSwitch agent"
EGR, KPPS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_PACKET_RATE_KILOPACKET_PER_SEC"
BRIDGE = provider_uuid("cn1:Open vSwitch agent:br-ex")
AGENT = provider_uuid("cn1:Open vSwitch agent")
OVS_CONFIG = {
    "bridge_mappings": {"public": "br-ex"},
    "resource_provider_bandwidths": {"br-ex": {"egress": 10_000}},
    "resource_provider_packet_processing_without_direction": 1000,
}


@pytest.fixture
def placement(placement_service: PlacementService) -> Iterator[httpx.Client]:
    with wsgi_client(placement_service) as client:
        client.headers.update({"x-auth-token": "admin", "openstack-api-version": "placement 1.39"})
        yield client


@pytest.fixture
def network(network_service: NetworkService, placement: httpx.Client) -> Iterator[httpx.Client]:
    """The network API of a service that rewrites allocations in ``placement``."""
    network_service.allocations = PlacementAllocations(placement)
    with network_client_for(network_service) as client:
        yield client


def _qos(client: httpx.Client, kbps: int, kpps: int = 0) -> str:
    policy = post_made(client, "/v2.0/qos/policies", "policy", name=f"bw{kbps}")
    post_made(client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
          "minimum_bandwidth_rule", min_kbps=kbps)  # fmt: skip
    if kpps:
        post_made(client, f"/v2.0/qos/policies/{policy['id']}/minimum_packet_rate_rules",
              "minimum_packet_rate_rule", min_kpps=kpps, direction="any")  # fmt: skip
    return str(policy["id"])


def _host(
    network: httpx.Client, placement: httpx.Client, service: NetworkService, host: str
) -> None:
    """A compute node in Placement, an OVS agent on it, and the agent's providers under it."""
    node = {"name": host, "uuid": str(uuid.uuid4())}
    assert placement.post("/resource_providers", json=node).status_code == 200
    agent = {"agent_type": OVS, "host": host, "binary": "sim", "topic": "N/A",
             "configurations": OVS_CONFIG}  # fmt: skip
    assert network.post("/v2.0/agents", json={"agent": agent}).is_success
    PlacementReporter(service.db, PlacementSync(placement)).run_once()


def _allocate(placement: httpx.Client, server: str, allocations: dict[str, dict[str, int]]) -> None:
    body = {
        "allocations": {rp: {"resources": held} for rp, held in allocations.items()},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    answer = placement.put(f"/allocations/{server}", json=body)
    assert answer.status_code == 204, answer.text


def _held(placement: httpx.Client, server: str) -> dict[str, dict[str, int]]:
    found = placement.get(f"/allocations/{server}").json()["allocations"]
    return {rp: entry["resources"] for rp, entry in found.items()}


def _bound_port(network: httpx.Client, net: str, server: str, **body: Any) -> dict[str, Any]:
    """A port of ``server`` bound to cn1, its groups on the bridge and the agent."""
    port = post_made(network, "/v2.0/ports", "port", network_id=net, device_id=server, **body)
    mapped = {
        g["id"]: BRIDGE if "NET_BW_EGR_KILOBIT_PER_SEC" in g["resources"] else AGENT
        for g in port["resource_request"]["request_groups"]
    }
    update = {"binding:host_id": "cn1", "binding:profile": {"allocation": mapped}}
    answer = network.put(f"/v2.0/ports/{port['id']}", json={"port": update})
    assert answer.is_success, answer.text
    return answer.json()["port"]  # type: ignore[no-any-return]


def _flat(network: httpx.Client, **body: Any) -> str:
    net = post_made(network, "/v2.0/networks", "network", **{
        "provider:network_type": "flat", "provider:physical_network": "public"}, **body)  # fmt: skip
    post_made(network, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=4,
          cidr="10.0.0.0/24")  # fmt: skip
    return str(net["id"])


def _refusal(answer: httpx.Response) -> str:
    assert answer.status_code == 409, answer.text
    error = answer.json()["NeutronError"]
    assert error["type"] == "QosPolicyChangeRefused", error
    return str(error["message"]).split(":", 1)[0]


def test_a_network_policy_change_follows_the_ports_without_their_own(
    network: httpx.Client, placement: httpx.Client, network_service: NetworkService
) -> None:
    _host(network, placement, network_service, "cn1")
    net = _flat(network, qos_policy_id=_qos(network, 1000))
    server = str(uuid.uuid4())
    follower = _bound_port(network, net, server)
    own = _bound_port(network, net, server, qos_policy_id=_qos(network, 500))
    _allocate(placement, server, {BRIDGE: {EGR: 1500}})

    answer = network.put(
        f"/v2.0/networks/{net}", json={"network": {"qos_policy_id": _qos(network, 4000)}}
    )
    assert answer.is_success, answer.text
    assert _held(placement, server) == {BRIDGE: {EGR: 4500}}
    shown = network.get(f"/v2.0/ports/{follower['id']}").json()["port"]
    assert shown["binding:profile"] == follower["binding:profile"]
    assert (
        network.get(f"/v2.0/ports/{own['id']}").json()["port"]["resource_request"]
        == (own["resource_request"])
    )


def test_dropping_one_group_keeps_the_other_and_the_profile_follows(
    network: httpx.Client, placement: httpx.Client, network_service: NetworkService
) -> None:
    _host(network, placement, network_service, "cn1")
    net = _flat(network)
    server = str(uuid.uuid4())
    port = _bound_port(network, net, server, qos_policy_id=_qos(network, 1000, 10))
    _allocate(placement, server, {BRIDGE: {EGR: 1000}, AGENT: {KPPS: 10}})
    bandwidth_only = _qos(network, 2000)

    answer = network.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": bandwidth_only}}
    )
    assert answer.is_success, answer.text
    assert _held(placement, server) == {BRIDGE: {EGR: 2000}}
    (group,) = answer.json()["port"]["resource_request"]["request_groups"]
    assert answer.json()["port"]["binding:profile"] == {"allocation": {group["id"]: BRIDGE}}

    # The packet rate group is gone: asking for it again needs a provider chosen for it.
    answer = network.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": _qos(network, 2000, 10)}}
    )
    assert _refusal(answer) == "new-request-group"
    assert _held(placement, server) == {BRIDGE: {EGR: 2000}}


def test_a_changed_allocation_or_a_moving_port_is_refused(
    network: httpx.Client, placement: httpx.Client, network_service: NetworkService
) -> None:
    _host(network, placement, network_service, "cn1")
    net = _flat(network)
    server = str(uuid.uuid4())
    port = _bound_port(network, net, server, qos_policy_id=_qos(network, 1000))
    bigger = _qos(network, 2000)
    change = {"port": {"qos_policy_id": bigger}}

    # Placement lost the port's part: the network does not guess, heal-allocations repairs.
    _allocate(placement, server, {AGENT: {KPPS: 1}})
    assert _refusal(network.put(f"/v2.0/ports/{port['id']}", json=change)) == "allocation-not-held"
    assert _held(placement, server) == {AGENT: {KPPS: 1}}

    _host(network, placement, network_service, "cn2")
    (group,) = port["resource_request"]["request_groups"]
    there = {"allocation": {group["id"]: provider_uuid("cn2:Open vSwitch agent:br-ex")}}
    binding = network.post(
        f"/v2.0/ports/{port['id']}/bindings", json={"binding": {"host": "cn2", "profile": there}}
    )
    assert binding.status_code == 201, binding.text
    assert _refusal(network.put(f"/v2.0/ports/{port['id']}", json=change)) == "port-moving"
    assert network.get(f"/v2.0/ports/{port['id']}").json()["port"]["qos_policy_id"] != bigger


def test_a_transaction_that_rolls_back_after_the_rewrite_gives_the_amounts_back(
    network: httpx.Client, placement: httpx.Client, network_service: NetworkService
) -> None:
    _host(network, placement, network_service, "cn1")
    net = _flat(network)
    server = str(uuid.uuid4())
    port = _bound_port(network, net, server, qos_policy_id=_qos(network, 1000))
    _allocate(placement, server, {BRIDGE: {EGR: 1000}})
    bigger = _qos(network, 2000)

    class LaterFailure(Exception):
        pass

    with pytest.raises(LaterFailure), network_service.db.write() as conn:
        with bound_requests.following_bound_requests(
            conn, network_service.allocations, [port["id"]]
        ):
            port_store.update(conn, port["id"], {"qos_policy_id": bigger})
        assert _held(placement, server) == {BRIDGE: {EGR: 2000}}
        raise LaterFailure
    assert _held(placement, server) == {BRIDGE: {EGR: 1000}}
    assert network.get(f"/v2.0/ports/{port['id']}").json()["port"]["qos_policy_id"] != bigger

    with (
        network_service.db.write() as conn,
        bound_requests.following_bound_requests(conn, network_service.allocations, [port["id"]]),
    ):
        port_store.update(conn, port["id"], {"qos_policy_id": bigger})
    assert _held(placement, server) == {BRIDGE: {EGR: 2000}}

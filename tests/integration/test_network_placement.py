"""The network and Placement services together, in process: agents' providers appear in
Placement, a port's resource_request finds exactly the providers that can serve it, and the
allocation Placement proposes is what the binding accepts."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.config import NetworkSettings
from berth.network.placement_sync import PlacementSync
from berth.network.reporter import PlacementReporter
from berth.network.reporting import provider_uuid
from berth.network.service import NetworkService
from berth.network.store import migrate
from berth.placement.service import PlacementService
from tests.conftest import network_client_for, wsgi_client

OVS = "Open vSwitch agent"
SRIOV = "NIC Switch agent"


@pytest.fixture
def placement(placement_service: PlacementService) -> Iterator[httpx.Client]:
    with wsgi_client(placement_service) as client:
        client.headers.update({"x-auth-token": "admin", "openstack-api-version": "placement 1.39"})
        yield client


@pytest.fixture
def network(
    tmp_path: Path, placement: httpx.Client
) -> Iterator[tuple[httpx.Client, PlacementReporter]]:
    db = Database(f"sqlite:///{tmp_path / 'network.db'}")
    migrate.sync(db)
    service = NetworkService(settings=NetworkSettings(), db=db)
    reporter = PlacementReporter(db, PlacementSync(placement))
    with network_client_for(service) as client:
        yield client, reporter
    db.dispose()


def _ok(answer: httpx.Response) -> dict[str, Any]:
    assert answer.is_success, answer.text
    return answer.json() if answer.content else {}  # type: ignore[no-any-return]


def _compute_node(placement: httpx.Client, host: str) -> str:
    node = str(uuid.uuid4())
    _ok(placement.post("/resource_providers", json={"name": host, "uuid": node}))
    inventory = {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 32768}}
    _ok(placement.put(f"/resource_providers/{node}/inventories",
                      json={"inventories": inventory, "resource_provider_generation": 0}))  # fmt: skip
    return node


def _agent(client: httpx.Client, kind: str, host: str, config: dict[str, Any]) -> None:
    body = {
        "agent_type": kind,
        "host": host,
        "binary": "sim",
        "topic": "N/A",
        "configurations": config,
    }
    _ok(client.post("/v2.0/agents", json={"agent": body}))


def _query(request: dict[str, Any]) -> list[tuple[str, str]]:
    """The port's request groups as Placement query parameters, one suffix per group."""
    params = [("resources", "VCPU:1")]
    for group in request["request_groups"]:
        suffix = "_" + group["id"]
        params.append(
            (f"resources{suffix}", ",".join(f"{rc}:{n}" for rc, n in group["resources"].items()))
        )
        params += [(f"required{suffix}", trait) for trait in group["required"]]
    if len(request["same_subtree"]) > 1:
        params.append(("same_subtree", ",".join("_" + g for g in request["same_subtree"])))
    params.append(("group_policy", "none"))
    return params


def test_a_ports_request_finds_exactly_the_providers_that_can_serve_it(
    placement: httpx.Client, network: tuple[httpx.Client, PlacementReporter]
) -> None:
    client, reporter = network
    nodes = {host: _compute_node(placement, host) for host in ("cn1", "cn2", "cn3", "cn4")}
    public = {"bridge_mappings": {"public": "br-ex"}}
    _agent(client, OVS, "cn1", {**public, "resource_provider_bandwidths": {"br-ex": {"egress": 10_000}},
                                "resource_provider_packet_processing_without_direction": 500})  # fmt: skip
    _agent(client, OVS, "cn2", {**public, "resource_provider_bandwidths": {"br-ex": {"egress": 500}},
                                "resource_provider_packet_processing_without_direction": 500})  # fmt: skip
    _agent(client, SRIOV, "cn3", {"device_mappings": {"public": ["ens1f0"]},
                                  "resource_provider_bandwidths": {"ens1f0": {"egress": 25_000}}})  # fmt: skip
    _agent(client, OVS, "cn4", {"bridge_mappings": {"other": "br-ex"},
                                "resource_provider_bandwidths": {"br-ex": {"egress": 10_000}},
                                "resource_provider_packet_processing_without_direction": 500})  # fmt: skip
    assert reporter.run_once().problems == {}
    tree = _ok(placement.get("/resource_providers", params={"in_tree": nodes["cn1"]}))
    assert len(tree["resource_providers"]) == 3

    net = _ok(client.post("/v2.0/networks", json={"network": {
        "provider:network_type": "flat", "provider:physical_network": "public"}}))["network"]  # fmt: skip
    _ok(client.post("/v2.0/subnets", json={"subnet": {"network_id": net["id"], "ip_version": 4,
                                                      "cidr": "192.0.2.0/24"}}))  # fmt: skip
    policy = _ok(client.post("/v2.0/qos/policies", json={"policy": {"name": "gold"}}))["policy"]
    for path, rule in (
        ("minimum_bandwidth_rules", {"minimum_bandwidth_rule": {"min_kbps": 1000}}),
        (
            "minimum_packet_rate_rules",
            {"minimum_packet_rate_rule": {"min_kpps": 100, "direction": "any"}},
        ),
    ):
        _ok(client.post(f"/v2.0/qos/policies/{policy['id']}/{path}", json=rule))
    port = _ok(
        client.post(
            "/v2.0/ports", json={"port": {"network_id": net["id"], "qos_policy_id": policy["id"]}}
        )
    )
    request = port["port"]["resource_request"]
    bandwidth, packet_rate = request["request_groups"]

    found = _ok(placement.get("/allocation_candidates", params=_query(request)))
    (candidate,) = found[
        "allocation_requests"
    ]  # cn2 lacks bandwidth, cn3 is SR-IOV, cn4 another physnet
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    agent = provider_uuid("cn1:Open vSwitch agent")
    assert candidate["mappings"] == {
        "": [nodes["cn1"]], "_" + bandwidth["id"]: [bridge], "_" + packet_rate["id"]: [agent],
    }  # fmt: skip
    assert candidate["allocations"][bridge]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}

    # The conductor's side: claim what Placement proposed, then bind with the mapping.
    claim = {"allocations": candidate["allocations"], "project_id": "p", "user_id": "u",
             "consumer_generation": None, "consumer_type": "INSTANCE"}  # fmt: skip
    assert placement.put(f"/allocations/{uuid.uuid4()}", json=claim).status_code == 204
    allocation = {
        group["id"]: candidate["mappings"]["_" + group["id"]][0]
        for group in (bandwidth, packet_rate)
    }
    bound = _ok(client.put(f"/v2.0/ports/{port['port']['id']}", json={"port": {
        "binding:host_id": "cn1", "binding:profile": {"allocation": allocation}}}))["port"]  # fmt: skip
    assert (bound["binding:host_id"], bound["binding:vif_type"]) == ("cn1", "ovs")

    # A direct (SR-IOV) port with a bandwidth-only policy lands on cn3's physical function; with
    # the packet-rate rule too it fits nowhere (an SR-IOV agent has no packet-rate inventory).
    found = _ok(
        placement.get(
            "/allocation_candidates", params=_query(_direct_port(client, net["id"], policy["id"]))
        )
    )
    assert found["allocation_requests"] == []
    bandwidth_only = _ok(client.post("/v2.0/qos/policies", json={"policy": {"name": "bw"}}))[
        "policy"
    ]
    _ok(client.post(f"/v2.0/qos/policies/{bandwidth_only['id']}/minimum_bandwidth_rules",
                    json={"minimum_bandwidth_rule": {"min_kbps": 1000}}))  # fmt: skip
    found = _ok(
        placement.get(
            "/allocation_candidates",
            params=_query(_direct_port(client, net["id"], bandwidth_only["id"])),
        )
    )
    (candidate,) = found["allocation_requests"]
    assert provider_uuid("cn3:NIC Switch agent:ens1f0") in candidate["allocations"]


def _direct_port(client: httpx.Client, network_id: str, policy_id: str) -> dict[str, Any]:
    body = {"network_id": network_id, "qos_policy_id": policy_id, "binding:vnic_type": "direct"}
    return _ok(client.post("/v2.0/ports", json={"port": body}))["port"]["resource_request"]  # type: ignore[no-any-return]

"""Bulk creates of networks, subnets and ports (``{"networks": [...]}``) over HTTP: all in one
transaction, answered with the plural list, and none kept when one item is refused."""

from __future__ import annotations

from typing import Any

import httpx

from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error


def _bulk(client: httpx.Client, collection: str, items: list[dict[str, Any]]) -> httpx.Response:
    return client.post(f"/v2.0/{collection}", json={collection: items})


def _ids(client: httpx.Client, collection: str) -> list[str]:
    return [item["id"] for item in client.get(f"/v2.0/{collection}").json()[collection]]


def test_networks_are_created_together(network_client: httpx.Client) -> None:
    answer = _bulk(network_client, "networks", [{"name": "a"}, {"name": "b", "shared": True}])
    assert answer.status_code == 201, answer.text
    made = answer.json()["networks"]
    assert [(n["name"], n["shared"]) for n in made] == [("a", False), ("b", True)]
    # Each took its own VNI, the second seeing the first in the same transaction.
    assert [n["provider:segmentation_id"] for n in made] == [1, 2]
    assert sorted(_ids(network_client, "networks")) == sorted(n["id"] for n in made)


def test_one_refused_network_keeps_none(network_client: httpx.Client) -> None:
    items = [{"name": "fine"}, {"name": "x" * 256}]
    message = neutron_error(_bulk(network_client, "networks", items), 400, "InvalidInput")
    assert "name" in message
    vlan = {"provider:network_type": "vlan", "provider:physical_network": "physnet1"}
    clash = [{**vlan, "provider:segmentation_id": 7}, {**vlan, "provider:segmentation_id": 7}]
    neutron_error(_bulk(network_client, "networks", clash), 409, "SegmentationIdInUse")
    assert _ids(network_client, "networks") == []


def test_subnets_are_created_together_or_not_at_all(network_client: httpx.Client) -> None:
    networks = _bulk(network_client, "networks", [{"name": "a"}, {"name": "b"}]).json()["networks"]
    items = [
        {"network_id": networks[0]["id"], "cidr": "10.0.0.0/24", "ip_version": 4, "name": "one"},
        {"network_id": networks[1]["id"], "cidr": "10.0.1.0/24", "ip_version": 4},
    ]
    overlap = [items[0], {**items[0], "name": "two"}]
    assert "overlap" in neutron_error(_bulk(network_client, "subnets", overlap), 400, "BadRequest")
    assert _ids(network_client, "subnets") == []
    answer = _bulk(network_client, "subnets", items)
    assert answer.status_code == 201, answer.text
    made = answer.json()["subnets"]
    assert [(s["name"], s["cidr"]) for s in made] == [("one", "10.0.0.0/24"), ("", "10.0.1.0/24")]
    shown = network_client.get(f"/v2.0/networks/{networks[0]['id']}").json()["network"]
    assert shown["subnets"] == [made[0]["id"]]


def test_ports_are_created_together_or_not_at_all(network_service: NetworkService) -> None:
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        network = alice.post("/v2.0/networks", json={"network": {}}).json()["network"]
        subnet = {"network_id": network["id"], "cidr": "10.0.0.0/29", "ip_version": 4}
        assert alice.post("/v2.0/subnets", json={"subnet": subnet}).status_code == 201
        items = [
            {"network_id": network["id"], "name": "p1", "admin_state_up": True},
            {"network_id": network["id"], "admin_state_up": False},
        ]
        answer = _bulk(alice, "ports", items)
        assert answer.status_code == 201, answer.text
        made = answer.json()["ports"]
        assert [(p["name"], p["admin_state_up"]) for p in made] == [("p1", True), ("", False)]
        addresses = [p["fixed_ips"][0]["ip_address"] for p in made]
        assert addresses == ["10.0.0.2", "10.0.0.3"]
        taken = {"network_id": network["id"], "fixed_ips": [{"ip_address": "10.0.0.2"}]}
        neutron_error(_bulk(alice, "ports", [items[0], taken]), 409, "IpAddressInUse")
        assert sorted(_ids(alice, "ports")) == sorted(p["id"] for p in made)


def test_bulk_creates_are_held_to_the_quota_together(network_client: httpx.Client) -> None:
    limit = network_client.put("/v2.0/quotas/alice", json={"quota": {"network": 2}})
    assert limit.status_code == 200, limit.text
    items = [{"name": str(i), "project_id": "alice"} for i in range(3)]
    message = neutron_error(_bulk(network_client, "networks", items), 409, "OverQuota")
    assert "limit is 2 and it has 0" in message
    assert _ids(network_client, "networks") == []
    assert _bulk(network_client, "networks", items[:2]).status_code == 201


def test_malformed_bulk_bodies_are_refused(network_client: httpx.Client) -> None:
    for body in ({"networks": []}, {"networks": {}}, {"networks": ["x"]}):
        neutron_error(network_client.post("/v2.0/networks", json=body), 400, "BadRequest")

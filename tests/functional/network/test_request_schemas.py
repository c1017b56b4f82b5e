"""Networking bodies held to their JSON schemas before the handler runs: a value its column
cannot hold is a 400 naming the attribute (InvalidInput, as Neutron words it), even for a
resource that does not exist; what upstream takes still passes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

MISSING = "00000000-0000-4000-8000-00000000dead"


def _invalid(answer: httpx.Response, attribute: str) -> None:
    assert answer.status_code == 400, answer.text
    error = answer.json()["NeutronError"]
    assert error["type"] == "InvalidInput", error
    assert error["message"].startswith(f"Invalid input for {attribute}. Reason: "), error


@pytest.fixture
def network(network_client: httpx.Client) -> dict[str, Any]:
    made = network_client.post("/v2.0/networks", json={"network": {"name": "n"}})
    assert made.status_code == 201, made.text
    network_client.post("/v2.0/subnets", json={"subnet": {
        "network_id": made.json()["network"]["id"], "cidr": "10.5.0.0/24", "ip_version": 4}})  # fmt: skip
    return dict(made.json()["network"])


def test_a_port_bound_to_a_host_name_past_its_column_is_refused(
    network_client: httpx.Client, network: dict[str, Any]
) -> None:
    # The binding's host went to a 255-character column unchecked (a database error on
    # PostgreSQL and MariaDB).
    port = network_client.post("/v2.0/ports", json={"port": {"network_id": network["id"]}})
    path = f"/v2.0/ports/{port.json()['port']['id']}"
    _invalid(
        network_client.put(path, json={"port": {"binding:host_id": "h" * 256}}), "binding:host_id"
    )
    # null unbinds, as upstream.
    unbound = network_client.put(path, json={"port": {"binding:host_id": None}})
    assert unbound.status_code == 200, unbound.text


@pytest.mark.parametrize(
    ("path", "body", "attribute"),
    [
        ("/v2.0/networks", {"network": {"name": "n" * 256}}, "name"),
        ("/v2.0/networks", {"network": {"mtu": "lots"}}, "mtu"),
        ("/v2.0/networks", {"network": {"admin_state_up": "maybe"}}, "admin_state_up"),
        (
            "/v2.0/networks",
            {"networks": [{"name": "a"}, {"description": "d" * 256}]},
            "description",
        ),
        (
            "/v2.0/networks",
            {"network": {"provider:segmentation_id": 2**24}},
            "provider:segmentation_id",
        ),
        ("/v2.0/subnets", {"subnet": {"dns_nameservers": ["1" * 65]}}, "dns_nameservers"),
        ("/v2.0/subnets", {"subnet": {"ip_version": 5}}, "ip_version"),
        ("/v2.0/ports", {"port": {"device_owner": "o" * 256}}, "device_owner"),
        ("/v2.0/ports", {"port": {"binding:vnic_type": "fast"}}, "binding:vnic_type"),
        ("/v2.0/qos/policies", {"policy": {"name": 7}}, "name"),
        ("/v2.0/rbac-policies", {"rbac_policy": {"target_tenant": "t" * 256}}, "target_tenant"),
        ("/v2.0/security-groups", {"security_group": {"name": "s" * 256}}, "name"),
        ("/v2.0/security-groups", {"security_group": {"stateful": "maybe"}}, "stateful"),
        (
            "/v2.0/security-group-rules",
            {"security_group_rule": {"security_group_id": MISSING, "description": "d" * 256}},
            "description",
        ),
        (
            "/v2.0/security-group-rules",
            {"security_group_rule": {"security_group_id": MISSING, "port_range_min": [22]}},
            "port_range_min",
        ),
        (
            "/v2.0/security-group-rules",
            {"security_group_rule": {"security_group_id": MISSING, "protocol": "p" * 41}},
            "protocol",
        ),
        ("/v2.0/routers", {"router": {"name": "r" * 256}}, "name"),
        ("/v2.0/routers", {"router": {"admin_state_up": "maybe"}}, "admin_state_up"),
        (
            "/v2.0/floatingips",
            {"floatingip": {"floating_network_id": MISSING, "floating_ip_address": "1" * 65}},
            "floating_ip_address",
        ),
    ],
)
def test_a_value_past_its_column_is_an_invalid_input(
    network_client: httpx.Client, path: str, body: dict[str, Any], attribute: str
) -> None:
    _invalid(network_client.post(path, json=body), attribute)


def test_a_bad_bulk_item_creates_none(network_client: httpx.Client) -> None:
    before = len(network_client.get("/v2.0/networks").json()["networks"])
    bulk = {"networks": [{"name": "fine"}, {"name": "n" * 256}]}
    _invalid(network_client.post("/v2.0/networks", json=bulk), "name")
    assert len(network_client.get("/v2.0/networks").json()["networks"]) == before


def test_a_rule_rate_past_its_range_is_refused(network_client: httpx.Client) -> None:
    policy = network_client.post("/v2.0/qos/policies", json={"policy": {"name": "p"}})
    rules = f"/v2.0/qos/policies/{policy.json()['policy']['id']}/bandwidth_limit_rules"
    too_fast = {"bandwidth_limit_rule": {"max_kbps": 2**31}}
    _invalid(network_client.post(rules, json=too_fast), "max_kbps")
    # A string of digits passes, as upstream's converter takes it.
    made = network_client.post(rules, json={"bandwidth_limit_rule": {"max_kbps": "1000"}})
    assert made.status_code == 201, made.text


def test_a_quota_past_its_column_is_refused(network_client: httpx.Client) -> None:
    answer = network_client.put("/v2.0/quotas/demo", json={"quota": {"port": 2**31}})
    _invalid(answer, "port")
    fine = network_client.put("/v2.0/quotas/demo", json={"quota": {"port": "-1", "force": "True"}})
    assert fine.status_code == 200, fine.text


def test_the_body_is_judged_before_the_resource_is_looked_up(network_client: httpx.Client) -> None:
    long_name = {"network": {"name": "n" * 256}}
    _invalid(network_client.put(f"/v2.0/networks/{MISSING}", json=long_name), "name")
    fine = network_client.put(f"/v2.0/networks/{MISSING}", json={"network": {"name": "n"}})
    assert fine.status_code == 404, fine.text


def test_a_security_group_update_is_judged_before_the_group_is_looked_up(
    network_client: httpx.Client,
) -> None:
    path = f"/v2.0/security-groups/{MISSING}"
    long_text = {"security_group": {"description": "d" * 256}}
    _invalid(network_client.put(path, json=long_text), "description")
    fine = network_client.put(path, json={"security_group": {"description": "d" * 255}})
    assert fine.status_code == 404, fine.text


def test_router_and_floating_ip_updates_are_judged_before_the_lookup(
    network_client: httpx.Client,
) -> None:
    router = f"/v2.0/routers/{MISSING}"
    routes = {"router": {"routes": [{"destination": "1" * 65, "nexthop": "10.0.0.1"}]}}
    _invalid(network_client.put(router, json=routes), "destination")
    fine = network_client.put(router, json={"router": {"routes": None}})
    assert fine.status_code == 404, fine.text
    floating = f"/v2.0/floatingips/{MISSING}"
    long_text = {"floatingip": {"description": "d" * 256}}
    _invalid(network_client.put(floating, json=long_text), "description")
    answer = network_client.put(f"{router}/add_router_interface", json={"subnet_id": 5})
    assert answer.status_code == 400, answer.text


def test_unknown_attributes_are_refused_by_name(network_client: httpx.Client) -> None:
    answer = network_client.post("/v2.0/networks", json={"network": {"colour": "blue"}})
    assert answer.status_code == 400, answer.text
    assert "Unrecognized attribute(s) 'colour'" in answer.json()["NeutronError"]["message"]


def test_a_body_that_is_not_a_resource_is_a_bad_request(network_client: httpx.Client) -> None:
    answer = network_client.post("/v2.0/networks", json={"networks": [1]})
    assert answer.status_code == 400, answer.text
    assert answer.json()["NeutronError"]["type"] == "BadRequest"


def test_ip_availabilities_page_by_network(
    network_client: httpx.Client, network: dict[str, Any]
) -> None:
    # A limit (0 asks for the most) was a 500: the pages' links looked for an "id" these lack
    # (found by tools.fuzz_apis).
    path = "/v2.0/network-ip-availabilities"
    for limit in (0, 1):
        answer = network_client.get(path, params={"limit": limit})
        assert answer.status_code == 200, answer.text
    page = network_client.get(path, params={"limit": 1}).json()
    assert page["network_ip_availabilities"][0]["network_id"] == network["id"]
    marker = {"limit": 1, "marker": network["id"]}
    assert network_client.get(path, params=marker).status_code == 200

"""Bodies no client should send are 4xx NeutronError documents, never a 500 (issue 20)."""

from __future__ import annotations

import httpx
import pytest

from berth.common.body import MAX_BODY_BYTES
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for

# A value a thousand levels deep (a network's name here) is a 500 without the depth limit.
DEEP = b'{"network": {"name": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1002


@pytest.fixture
def member(network_service: NetworkService) -> httpx.Client:
    return network_client_for(network_service, "alice", roles=MEMBER_ROLES)


def test_a_body_nested_a_thousand_deep_is_a_bad_request(member: httpx.Client) -> None:
    answer = member.post(
        "/v2.0/networks", content=DEEP, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400, answer.text
    assert "nested deeper" in answer.json()["NeutronError"]["message"]


def test_a_body_past_the_size_limit_is_too_large(member: httpx.Client) -> None:
    name = "n" * MAX_BODY_BYTES
    answer = member.post("/v2.0/networks", json={"network": {"name": name}})
    assert answer.status_code == 413, answer.text
    assert answer.json()["NeutronError"]["type"] == "RequestEntityTooLarge"


def test_a_null_mtu_is_a_bad_request(member: httpx.Client) -> None:
    created = member.post("/v2.0/networks", json={"network": {"name": "n", "mtu": None}})
    assert created.status_code == 400, created.text
    assert created.json()["NeutronError"]["type"] == "InvalidInput"
    network = member.post("/v2.0/networks", json={"network": {"name": "n"}}).json()["network"]
    updated = member.put(f"/v2.0/networks/{network['id']}", json={"network": {"mtu": None}})
    assert updated.status_code == 400, updated.text
    assert member.get(f"/v2.0/networks/{network['id']}").json()["network"]["mtu"] == network["mtu"]


NETWORK_FIELDS = ["name", "mtu", "admin_state_up", "description", "port_security_enabled",
                  "qos_policy_id", "availability_zone_hints", "dns_domain"]  # fmt: skip
SUBNET_FIELDS = ["name", "gateway_ip", "enable_dhcp", "allocation_pools", "dns_nameservers",
                 "host_routes", "description", "ipv6_address_mode", "ipv6_ra_mode", "prefixlen",
                 "segment_id", "service_types"]  # fmt: skip
PORT_FIELDS = ["name", "admin_state_up", "mac_address", "fixed_ips", "device_id", "device_owner",
               "description", "binding:host_id", "binding:profile", "binding:vnic_type",
               "port_security_enabled", "qos_policy_id", "allowed_address_pairs", "dns_name",
               "propagate_uplink_status", "numa_affinity_policy"]  # fmt: skip


@pytest.mark.parametrize("value", [None, 2**64, -(2**64), 2**31])
def test_nulls_and_huge_numbers_in_any_field_are_never_a_server_error(
    member: httpx.Client, value: object
) -> None:
    network = member.post("/v2.0/networks", json={"network": {"name": "n"}}).json()["network"]
    subnet = {"network_id": network["id"], "cidr": "10.0.0.0/24", "ip_version": 4}
    subnet_id = member.post("/v2.0/subnets", json={"subnet": subnet}).json()["subnet"]["id"]
    port = {"network_id": network["id"]}
    port_id = member.post("/v2.0/ports", json={"port": port}).json()["port"]["id"]
    subnet = {**subnet, "cidr": "10.0.1.0/24"}
    for collection, member_key, fields, base, existing in (
        ("networks", "network", NETWORK_FIELDS, {}, network["id"]),
        ("subnets", "subnet", SUBNET_FIELDS, subnet, subnet_id),
        ("ports", "port", PORT_FIELDS, port, port_id),
    ):
        for field in fields:
            created = member.post(f"/v2.0/{collection}", json={member_key: {**base, field: value}})
            assert created.status_code < 500, (collection, field, created.text)
            updated = member.put(
                f"/v2.0/{collection}/{existing}", json={member_key: {field: value}}
            )
            assert updated.status_code < 500, (collection, field, updated.text)
            listed = member.get(f"/v2.0/{collection}", params={field: str(value)})
            assert listed.status_code < 500, (collection, field, listed.text)

"""/v2.0/security-groups and /v2.0/security-group-rules over HTTP: each project's default
group, rule validation and duplicates, groups in use by ports, the default group's protections,
ports' security_groups and port_security_enabled, and the quotas."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error


@pytest.fixture
def alice(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as client:
        yield client


@pytest.fixture
def bob(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "bob", roles=MEMBER_ROLES) as client:
        yield client


def _group(client: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = client.post("/v2.0/security-groups", json={"security_group": {"name": "web", **body}})
    assert answer.status_code == 201, answer.text
    return answer.json()["security_group"]  # type: ignore[no-any-return]


def _rule(client: httpx.Client, group_id: str, **body: Any) -> httpx.Response:
    rule = {"security_group_id": group_id, "direction": "ingress", **body}
    return client.post("/v2.0/security-group-rules", json={"security_group_rule": rule})


def _shape(rule: dict[str, Any]) -> tuple[Any, ...]:
    return (
        rule["direction"], rule["ethertype"], rule["protocol"], rule["remote_ip_prefix"],
        rule["remote_group_id"],
    )  # fmt: skip


def _default(client: httpx.Client) -> dict[str, Any]:
    groups = client.get("/v2.0/security-groups", params={"name": "default"}).json()
    (found,) = groups["security_groups"]
    return found  # type: ignore[no-any-return]


def test_listing_makes_the_projects_default_group_once(alice: httpx.Client) -> None:
    first = _default(alice)
    assert _default(alice)["id"] == first["id"]
    assert first["project_id"] == "alice" and first["stateful"] is True
    assert sorted(_shape(r) for r in first["security_group_rules"]) == [
        ("egress", "IPv4", None, None, None),
        ("egress", "IPv6", None, None, None),
        ("ingress", "IPv4", None, None, first["id"]),
        ("ingress", "IPv6", None, None, first["id"]),
    ]


def test_a_new_group_lets_everything_out(alice: httpx.Client) -> None:
    group = _group(alice, description="d", stateful=False)
    assert group["name"] == "web" and group["description"] == "d"
    assert group["stateful"] is False and group["revision_number"] == 0
    assert sorted(_shape(r) for r in group["security_group_rules"]) == [
        ("egress", "IPv4", None, None, None),
        ("egress", "IPv6", None, None, None),
    ]
    # The project's default group was made with it.
    names = sorted(g["name"] for g in alice.get("/v2.0/security-groups").json()["security_groups"])
    assert names == ["default", "web"]


def test_groups_are_their_projects(alice: httpx.Client, bob: httpx.Client) -> None:
    group = _group(alice)
    path = f"/v2.0/security-groups/{group['id']}"
    neutron_error(bob.get(path), 404, "SecurityGroupNotFound")
    neutron_error(
        bob.put(path, json={"security_group": {"name": "x"}}), 404, "SecurityGroupNotFound"
    )
    neutron_error(bob.delete(path), 404, "SecurityGroupNotFound")
    neutron_error(_rule(bob, group["id"]), 404, "SecurityGroupNotFound")
    assert [g["name"] for g in bob.get("/v2.0/security-groups").json()["security_groups"]] == [
        "default"
    ]
    rule_id = group["security_group_rules"][0]["id"]
    neutron_error(
        bob.get(f"/v2.0/security-group-rules/{rule_id}"), 404, "SecurityGroupRuleNotFound"
    )
    assert bob.get("/v2.0/security-group-rules", params={"id": rule_id}).json() == {
        "security_group_rules": []
    }


def test_update_list_filters_fields_and_delete(alice: httpx.Client) -> None:
    group = _group(alice)
    path = f"/v2.0/security-groups/{group['id']}"
    answer = alice.put(path, json={"security_group": {"name": "db", "description": "new"}})
    assert answer.status_code == 200, answer.text
    changed = answer.json()["security_group"]
    assert (changed["name"], changed["description"]) == ("db", "new")
    assert changed["revision_number"] == 1
    listed = alice.get("/v2.0/security-groups", params={"name": "db", "fields": ["id", "name"]})
    assert listed.json() == {"security_groups": [{"id": group["id"], "name": "db"}]}
    ordered = alice.get("/v2.0/security-groups", params={"sort_key": "name", "sort_dir": "asc"})
    assert [g["name"] for g in ordered.json()["security_groups"]] == ["db", "default"]
    neutron_error(alice.get("/v2.0/security-groups", params={"color": "red"}), 400, "BadRequest")
    assert alice.delete(path).status_code == 204
    neutron_error(alice.get(path), 404, "SecurityGroupNotFound")
    # Its rules went with it.
    left = alice.get("/v2.0/security-group-rules", params={"security_group_id": group["id"]})
    assert left.json() == {"security_group_rules": []}


def test_the_default_name_is_the_default_groups(
    alice: httpx.Client, network_client: httpx.Client
) -> None:
    neutron_error(
        alice.post("/v2.0/security-groups", json={"security_group": {"name": "default"}}),
        409,
        "SecurityGroupDefaultAlreadyExists",
    )
    group = _group(alice)
    renamed = alice.put(
        f"/v2.0/security-groups/{group['id']}", json={"security_group": {"name": "default"}}
    )
    neutron_error(renamed, 409, "SecurityGroupDefaultAlreadyExists")
    default = _default(alice)
    path = f"/v2.0/security-groups/{default['id']}"
    neutron_error(
        alice.put(path, json={"security_group": {"name": "other"}}),
        409,
        "SecurityGroupCannotUpdateDefault",
    )
    assert alice.put(path, json={"security_group": {"description": "ours"}}).status_code == 200
    neutron_error(alice.delete(path), 409, "SecurityGroupCannotRemoveDefault")
    # An admin may delete it; the next listing makes a new one.
    assert network_client.delete(path).status_code == 204
    assert _default(alice)["id"] != default["id"]


@pytest.mark.parametrize(
    ("rule", "kind", "words"),
    [
        ({"direction": "sideways"}, "InvalidInput", "direction"),
        ({"ethertype": "IPv5"}, "InvalidInput", "ethertype"),
        ({"protocol": "tcp", "port_range_min": -16, "port_range_max": 80},
         "InvalidInput", "Invalid value for port -16"),
        ({"protocol": "tcp", "port_range_min": 80, "port_range_max": 79},
         "SecurityGroupInvalidPortRange", "port_range_min must be <= port_range_max"),
        ({"protocol": "tcp", "port_range_min": 80, "port_range_max": 65536},
         "InvalidInput", "Invalid value for port 65536"),
        ({"protocol": "udp", "port_range_max": 6},
         "SecurityGroupInvalidPortRange", "port_range_min must be <= port_range_max"),
        ({"protocol": "icmp", "port_range_min": 1, "port_range_max": 256},
         "SecurityGroupInvalidIcmpValue", "Invalid value for ICMP code"),
        ({"protocol": "icmp", "port_range_min": 300, "port_range_max": 1},
         "SecurityGroupInvalidIcmpValue", "Invalid value for ICMP type"),
        ({"protocol": "icmp", "port_range_max": 6},
         "SecurityGroupMissingIcmpType", "ICMP type (port-range-min) is missing"),
        ({"port_range_min": 22, "port_range_max": 22},
         "SecurityGroupProtocolRequiredWithPorts", "protocol"),
        ({"protocol": "gre", "port_range_min": 22, "port_range_max": 22},
         "SecurityGroupInvalidProtocolForPortRange", "gre"),
        ({"protocol": "bad"}, "SecurityGroupRuleInvalidProtocol", "bad"),
        ({"protocol": 256}, "SecurityGroupRuleInvalidProtocol", "256"),
        ({"remote_ip_prefix": "10.0.0.0/33"}, "InvalidInput", "remote_ip_prefix"),
        ({"ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"},
         "InvalidInput", "Conflicting value ethertype IPv6"),
        ({"ethertype": "IPv4", "remote_ip_prefix": "2001:db8::/64"},
         "InvalidInput", "Conflicting value ethertype IPv4"),
        ({"protocol": "ipv6-icmp"}, "SecurityGroupEthertypeConflictWithProtocol", "IPv4"),
        ({"remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "GROUP"},
         "SecurityGroupRemoteGroupAndRemoteIpPrefix", "Only remote_ip_prefix or"),
        ({"color": "red"}, "BadRequest", "color"),
    ],
)  # fmt: skip
def test_bad_rules_are_400s(
    alice: httpx.Client, rule: dict[str, Any], kind: str, words: str
) -> None:
    group = _group(alice)
    body = {k: group["id"] if v == "GROUP" else v for k, v in rule.items()}
    assert words in neutron_error(_rule(alice, group["id"], **body), 400, kind)


def test_rules_as_given_and_their_duplicates(alice: httpx.Client) -> None:
    group, other = _group(alice), _group(alice, name="other")
    made = []
    for body in (
        {"protocol": "tcp", "port_range_min": 77, "port_range_max": 77},
        {"protocol": 17, "remote_group_id": other["id"]},
        {"ethertype": "IPv6", "protocol": "ipv6-icmp", "port_range_min": 3, "port_range_max": 2},
        {"protocol": "icmp", "port_range_min": 11, "remote_ip_prefix": "10.100.0.0/16"},
        {"ethertype": "IPv6", "protocol": "any", "remote_ip_prefix": "2001:db8::1/64"},
    ):
        answer = _rule(alice, group["id"], description="why", **body)
        assert answer.status_code == 201, answer.text
        made.append(answer.json()["security_group_rule"])
    assert made[0]["protocol"] == "tcp" and made[0]["port_range_max"] == 77
    assert made[1]["protocol"] == "17" and made[1]["remote_group_id"] == other["id"]
    assert (made[2]["port_range_min"], made[2]["port_range_max"]) == (3, 2)
    assert made[3]["port_range_max"] is None and made[3]["remote_ip_prefix"] == "10.100.0.0/16"
    assert made[4]["protocol"] is None and made[4]["remote_ip_prefix"] == "2001:db8::1/64"
    assert made[4]["normalized_cidr"] == "2001:db8::/64"
    assert made[0]["description"] == "why" and made[0]["project_id"] == "alice"
    # The same traffic again, however it is spelled, is a conflict naming the first rule.
    again = _rule(alice, group["id"], protocol="6", port_range_min=77, port_range_max=77)
    assert made[0]["id"] in neutron_error(again, 409, "SecurityGroupRuleExists")
    shown = alice.get(f"/v2.0/security-groups/{group['id']}").json()["security_group"]
    assert {r["id"] for r in made} <= {r["id"] for r in shown["security_group_rules"]}
    assert shown["revision_number"] == len(made)
    # Deleting the remote group takes the rules naming it.
    assert alice.delete(f"/v2.0/security-groups/{other['id']}").status_code == 204
    neutron_error(
        alice.get(f"/v2.0/security-group-rules/{made[1]['id']}"), 404, "SecurityGroupRuleNotFound"
    )
    assert alice.delete(f"/v2.0/security-group-rules/{made[0]['id']}").status_code == 204
    neutron_error(
        alice.delete(f"/v2.0/security-group-rules/{made[0]['id']}"),
        404,
        "SecurityGroupRuleNotFound",
    )


def test_a_rule_needs_groups_that_exist(alice: httpx.Client) -> None:
    missing = "6f0a9a55-7a8f-4b8e-9d4e-2c6d1f0b1a11"
    neutron_error(_rule(alice, missing), 404, "SecurityGroupNotFound")
    group = _group(alice)
    neutron_error(_rule(alice, group["id"], remote_group_id=missing), 404, "SecurityGroupNotFound")
    answer = alice.post(
        "/v2.0/security-group-rules", json={"security_group_rule": {"direction": "ingress"}}
    )
    neutron_error(answer, 400, "BadRequest")


def _network(client: httpx.Client) -> str:
    answer = client.post("/v2.0/networks", json={"network": {"name": "n"}})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["network"]["id"])


def _port(client: httpx.Client, network_id: str, **body: Any) -> httpx.Response:
    return client.post("/v2.0/ports", json={"port": {"network_id": network_id, **body}})


def test_ports_and_their_groups(alice: httpx.Client, bob: httpx.Client) -> None:
    network = _network(alice)
    port = _port(alice, network).json()["port"]
    default = _default(alice)
    assert port["security_groups"] == [default["id"]] and port["port_security_enabled"] is True
    group = _group(alice)
    path = f"/v2.0/ports/{port['id']}"
    answer = alice.put(path, json={"port": {"security_groups": [group["id"], default["id"]]}})
    assert answer.status_code == 200, answer.text
    assert sorted(answer.json()["port"]["security_groups"]) == sorted([group["id"], default["id"]])
    # A group a port is in stays until the port leaves it.
    assert "in use" in neutron_error(
        alice.delete(f"/v2.0/security-groups/{group['id']}"), 409, "SecurityGroupInUse"
    )
    listed = alice.get("/v2.0/ports", params={"security_groups": group["id"]})
    assert [p["id"] for p in listed.json()["ports"]] == [port["id"]]
    # Another project's group is not found.
    theirs = _group(bob)
    neutron_error(
        alice.put(path, json={"port": {"security_groups": [theirs["id"]]}}),
        404,
        "SecurityGroupNotFound",
    )
    # No port security while the port is in groups; both at once is fine.
    neutron_error(
        alice.put(path, json={"port": {"port_security_enabled": False}}),
        409,
        "PortSecurityPortHasSecurityGroup",
    )
    answer = alice.put(path, json={"port": {"port_security_enabled": False, "security_groups": []}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["port"]["port_security_enabled"] is False
    neutron_error(
        alice.put(path, json={"port": {"security_groups": [group["id"]]}}),
        400,
        "PortSecurityAndIPRequiredForSecurityGroups",
    )
    assert alice.delete(f"/v2.0/security-groups/{group['id']}").status_code == 204


def test_ports_made_without_groups(alice: httpx.Client) -> None:
    network = _network(alice)
    none = _port(alice, network, security_groups=[]).json()["port"]
    assert none["security_groups"] == []
    unsecured = _port(alice, network, port_security_enabled=False).json()["port"]
    assert unsecured["security_groups"] == [] and unsecured["port_security_enabled"] is False
    dhcp = _port(alice, network, device_owner="network:dhcp").json()["port"]
    assert dhcp["security_groups"] == []
    neutron_error(
        _port(alice, network, port_security_enabled=False, security_groups=[_default(alice)["id"]]),
        400,
        "PortSecurityAndIPRequiredForSecurityGroups",
    )


def test_quotas_count_groups_and_rules(alice: httpx.Client, network_client: httpx.Client) -> None:
    limits = {"security_group": 2, "security_group_rule": 7}
    assert network_client.put("/v2.0/quotas/alice", json={"quota": limits}).status_code == 200
    group = _group(alice)  # with the default group: 2 groups, 6 rules
    assert "['security_group']" in neutron_error(
        alice.post("/v2.0/security-groups", json={"security_group": {"name": "x"}}),
        409,
        "OverQuota",
    )
    assert _rule(alice, group["id"], protocol="tcp").status_code == 201
    assert "['security_group_rule']" in neutron_error(
        _rule(alice, group["id"], protocol="udp"), 409, "OverQuota"
    )
    details = alice.get("/v2.0/quotas/alice/details").json()["quota"]
    assert details["security_group"]["used"] == 2
    assert details["security_group_rule"]["used"] == 7


def test_a_networks_port_security_is_its_new_ports(alice: httpx.Client) -> None:
    answer = alice.post(
        "/v2.0/networks", json={"network": {"name": "n", "port_security_enabled": False}}
    )
    network = answer.json()["network"]
    assert network["port_security_enabled"] is False
    port = _port(alice, network["id"]).json()["port"]
    assert port["port_security_enabled"] is False and port["security_groups"] == []
    path = f"/v2.0/networks/{network['id']}"
    changed = alice.put(path, json={"network": {"port_security_enabled": True}}).json()["network"]
    assert changed["port_security_enabled"] is True
    port = _port(alice, network["id"]).json()["port"]
    assert port["port_security_enabled"] is True and port["security_groups"] == [
        _default(alice)["id"]
    ]


def test_racing_first_needs_make_one_default_group(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    """Listings and port creates of a new project at the same moment: one default group."""
    answer = network_client.post("/v2.0/networks", json={"network": {"shared": True}})
    network = answer.json()["network"]["id"]
    start = threading.Barrier(6)
    statuses: list[int] = []

    def one(index: int) -> None:
        with network_client_for(network_service, "carol", roles=MEMBER_ROLES) as client:
            start.wait()
            listed = index % 2
            answer = client.get("/v2.0/security-groups") if listed else _port(client, network)
            statuses.append(answer.status_code)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(statuses) == [200] * 3 + [201] * 3
    with network_client_for(network_service, "carol", roles=MEMBER_ROLES) as carol:
        (default,) = carol.get("/v2.0/security-groups").json()["security_groups"]
        ports = carol.get("/v2.0/ports", params={"project_id": "carol"}).json()["ports"]
    assert {tuple(p["security_groups"]) for p in ports} == {(default["id"],)}

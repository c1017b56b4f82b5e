"""Security groups through the Compute API, end to end: Nova's proxies below 2.36 (and their
404 from 2.36), a server's groups, addSecurityGroup/removeSecurityGroup, and the groups a create
names, applied to the ports made for the server; the network service holds the state."""

from __future__ import annotations

from typing import Any

import httpx

from berth.allinone.stack import Stack
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
OLD = {"openstack-api-version": "compute 2.35"}
NEW = {"openstack-api-version": "compute 2.36"}
GROUPS = "/compute/v2.1/os-security-groups"
RULES = "/compute/v2.1/os-security-group-rules"
SERVERS = "/compute/v2.1/servers"
STRANGER = {"x-auth-token": "eve:elsewhere", "x-roles": "member,reader", **OLD}


def _stack(start_stack: StackFactory) -> tuple[Stack, httpx.Client, str, str]:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **OVS_HOST}]})
    flavor, image = w.flavor_and_image(stack)
    return stack, client, flavor, image


def _status(answer: httpx.Response, status: int) -> Any:
    assert answer.status_code == status, f"{answer.status_code} {answer.text}"
    return answer.json() if answer.content else None


def _group(client: httpx.Client, name: str) -> dict[str, Any]:
    body = {"security_group": {"name": name, "description": f"{name} servers"}}
    return _status(client.post(GROUPS, json=body, headers=OLD), 200)["security_group"]  # type: ignore[no-any-return]


def test_the_proxies_show_the_networks_groups_as_nova_did(start_stack: StackFactory) -> None:
    _, client, _, _ = _stack(start_stack)
    web = _group(client, "web")
    assert web == {
        "id": web["id"], "name": "web", "description": "web servers", "tenant_id": "admin",
        "rules": [],  # its egress rules are not shown
    }  # fmt: skip
    listed = _status(client.get(GROUPS, headers=OLD), 200)["security_groups"]
    default = next(g for g in listed if g["name"] == "default")
    assert sorted(g["name"] for g in listed) == ["default", "web"]
    # The default group admits its own members.
    assert {(r["ip_protocol"], r["group"]["name"]) for r in default["rules"]} == {(None, "default")}
    network = _status(client.get(f"/networking/v2.0/security-groups/{web['id']}"), 200)
    assert network["security_group"]["name"] == "web"

    rule = {"parent_group_id": web["id"], "ip_protocol": "tcp", "from_port": 22, "to_port": 22}
    made = _status(client.post(RULES, json={"security_group_rule": rule}, headers=OLD), 200)
    assert made["security_group_rule"] == {
        "id": made["security_group_rule"]["id"], "parent_group_id": web["id"],
        "ip_protocol": "tcp", "from_port": 22, "to_port": 22,
        "ip_range": {"cidr": "0.0.0.0/0"}, "group": {},
    }  # fmt: skip
    _status(client.post(RULES, json={"security_group_rule": rule}, headers=OLD), 400)
    icmp = {"parent_group_id": web["id"], "ip_protocol": "icmp", "from_port": -1, "to_port": -1,
            "group_id": default["id"]}  # fmt: skip
    answer = _status(client.post(RULES, json={"security_group_rule": icmp}, headers=OLD), 200)
    assert answer["security_group_rule"]["group"] == {"name": "default", "tenant_id": "admin"}
    assert (
        answer["security_group_rule"]["from_port"],
        answer["security_group_rule"]["to_port"],
    ) == (-1, -1)
    # A CIDR with host bits is kept as given; an IPv6 one makes an IPv6 rule.
    for cidr in ("10.2.3.124/24", "2001:db8::5/64"):
        body = {**rule, "cidr": cidr}
        answer = _status(client.post(RULES, json={"security_group_rule": body}, headers=OLD), 200)
        assert answer["security_group_rule"]["ip_range"] == {"cidr": cidr}
    shown = _status(client.get(f"{GROUPS}/{web['id']}", headers=OLD), 200)["security_group"]
    assert len(shown["rules"]) == 4

    for bad in (
        {**rule, "from_port": 70000},
        {**rule, "from_port": 23},  # from above to
        {**rule, "ip_protocol": "gre"},
        {**rule, "parent_group_id": "not-a-uuid"},
    ):
        _status(client.post(RULES, json={"security_group_rule": bad}, headers=OLD), 400)
    missing = {**rule, "parent_group_id": "5e7e0000-0000-4000-8000-00000000dead"}
    _status(client.post(RULES, json={"security_group_rule": missing}, headers=OLD), 404)

    renamed = {"security_group": {"name": "www", "description": "new"}}
    _status(client.put(f"{GROUPS}/{web['id']}", json=renamed, headers=OLD), 200)
    for name in ("", " ", "x" * 256):
        body = {"security_group": {"name": name, "description": "d"}}
        _status(client.post(GROUPS, json=body, headers=OLD), 400)
    _status(client.delete(f"{GROUPS}/{default['id']}", headers=OLD), 400)
    _status(client.delete(f"{GROUPS}/", headers=OLD), 404)
    _status(client.delete(f"{RULES}/{made['security_group_rule']['id']}", headers=OLD), 202)
    _status(client.delete(f"{GROUPS}/{web['id']}", headers=OLD), 202)
    _status(client.get(f"{GROUPS}/{web['id']}", headers=OLD), 404)


def test_the_proxies_are_gone_from_2_36_and_keep_to_the_project(
    start_stack: StackFactory,
) -> None:
    _, client, _, _ = _stack(start_stack)
    _status(client.get(GROUPS, headers=NEW), 404)
    _status(client.post(RULES, json={"security_group_rule": {}}, headers=NEW), 404)
    web = _group(client, "web")
    _status(client.get(f"{GROUPS}/{web['id']}", headers=STRANGER), 404)
    _status(client.delete(f"{GROUPS}/{web['id']}", headers=STRANGER), 404)
    theirs = _status(client.get(GROUPS, headers=STRANGER), 200)["security_groups"]
    assert [(g["name"], g["tenant_id"]) for g in theirs] == [("default", "elsewhere")]
    everyone = _status(client.get(GROUPS, params={"all_tenants": "1"}, headers=OLD), 200)
    assert {g["tenant_id"] for g in everyone["security_groups"]} == {"admin", "elsewhere"}


def test_a_servers_groups_follow_its_ports(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    web, db = _group(client, "web"), _group(client, "db")
    net = w.network(client)
    _status(
        client.post(
            SERVERS,
            json={"server": {"name": "x", "flavorRef": flavor, "imageRef": image,
                             "networks": [{"uuid": net}], "security_groups": [{"name": "nope"}]}},
            headers=OLD,
        ),
        400,
    )  # fmt: skip
    server_id = w.boot(client, flavor, image, [{"uuid": net}], security_groups=[{"name": "web"}])
    server = w.wait(client, server_id)
    assert server["security_groups"] == [{"name": "web"}]
    (port,) = _status(client.get("/networking/v2.0/ports", params={"device_id": server_id}), 200)[
        "ports"
    ]
    assert port["security_groups"] == [web["id"]]

    action = f"{SERVERS}/{server_id}/action"
    _status(client.post(action, json={"addSecurityGroup": {"name": "db"}}, headers=OLD), 202)
    _status(client.post(action, json={"addSecurityGroup": {"name": "nope"}}, headers=OLD), 404)
    mine = _status(client.get(f"{SERVERS}/{server_id}/os-security-groups", headers=OLD), 200)
    assert sorted(g["id"] for g in mine["security_groups"]) == sorted([web["id"], db["id"]])
    # A group a server is in is not deleted.
    _status(client.delete(f"{GROUPS}/{db['id']}", headers=OLD), 400)
    detail = _status(client.get(f"{SERVERS}/detail", headers=w.COMPUTE), 200)["servers"]
    assert detail[0]["security_groups"] == [{"name": "db"}, {"name": "web"}]

    for name in ("web", "db"):
        body = {"removeSecurityGroup": {"name": name}}
        _status(client.post(action, json=body, headers=OLD), 202)
    _status(client.post(action, json={"removeSecurityGroup": {"name": "web"}}, headers=OLD), 400)
    # A server in no group shows none, as Nova's.
    assert "security_groups" not in w.wait(client, server_id)
    _status(client.delete(f"{GROUPS}/{db['id']}", headers=OLD), 202)

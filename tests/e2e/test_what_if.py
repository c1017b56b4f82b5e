"""What-ifs (``POST /os-berth-what-if``): the host a boot would get, the providers of each port's
request groups, the room left per cell and zone, and that asking claims nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from berth import cli
from berth.common.inprocess import InProcessTransport
from berth.compute.clients import http
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

BRIDGE = {"physnets": ["public"], "egress_kbps": 10_000, "ingress_kbps": 10_000}
OVS = {"bridges": {"br-ex": BRIDGE}, "packet_rate_kpps": 1000}
# Different memory, so the RAM weigher ranks the hosts the same way every time.
FLEET = {
    "cells": ["cell1", "cell2"],
    "hosts": [
        {"name": "big", "cell": "cell1", "vcpus": 16, "memory_mb": 32768, "disk_gb": 200, "ovs": OVS},
        {"name": "small", "cell": "cell1", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100, "ovs": OVS},
        {"name": "far", "cell": "cell2", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100, "ovs": OVS},
    ],
}  # fmt: skip
# 3,000 of each bridge's 10,000 kbps: three servers per host, nine in all.
KBPS = 3_000
WHAT_IF = "/compute/v2.1/os-berth-what-if"


def _qos_network(client: httpx.Client) -> str:
    net = w.network(client)
    policy = w.bandwidth_policy(client, KBPS)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )
    return net


def _zone(client: httpx.Client, host: str, zone: str) -> None:
    aggregate = w.ok(client.post("/compute/v2.1/os-aggregates", headers=w.COMPUTE, json={
        "aggregate": {"name": zone, "availability_zone": zone}}))["aggregate"]  # fmt: skip
    w.ok(client.post(f"/compute/v2.1/os-aggregates/{aggregate['id']}/action", headers=w.COMPUTE,
                     json={"add_host": {"host": host}}))  # fmt: skip


def _body(flavor: str, image: str, networks: Any, **extra: Any) -> dict[str, Any]:
    server = {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": networks}
    return {"server": server, **extra}


def _ask(client: httpx.Client, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    answer = client.post(WHAT_IF, json=body, headers={**w.COMPUTE, **headers})
    return w.ok(answer)["what_if"]  # type: ignore[no-any-return]


def _usages(client: httpx.Client) -> dict[str, dict[str, int]]:
    providers = w.ok(client.get("/placement/resource_providers", headers=w.PLACEMENT))
    return {
        rp["uuid"]: w.ok(
            client.get(f"/placement/resource_providers/{rp['uuid']}/usages", headers=w.PLACEMENT)
        )["usages"]
        for rp in providers["resource_providers"]
    }


def _ports(client: httpx.Client) -> list[str]:
    return sorted(p["id"] for p in w.ok(client.get("/networking/v2.0/ports"))["ports"])


def test_a_what_if_names_the_host_and_providers_a_boot_then_gets_and_claims_nothing(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    before, ports_before = _usages(client), _ports(client)
    asked = _ask(client, _body(flavor, image, [{"uuid": net}]))
    assert asked["fits"] is True and asked["message"] is None, asked
    (chosen,) = asked["instances"]
    assert (chosen["host"], chosen["cell"]) == ("big", "cell1")
    assert [a["host"] for a in chosen["alternates"]] == ["small"]  # same cell only
    # The port does not exist yet: modelled from the network's QoS policy.
    ((port,),) = [p["request_groups"] for p in chosen["ports"]]
    assert chosen["ports"][0]["port_id"] is None and chosen["ports"][0]["network_id"] == net
    assert port["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": KBPS}
    assert w.provider_name(client, port["provider"]) == "big:Open vSwitch agent:br-ex"
    # Nothing was claimed, no port made.
    assert (_usages(client), _ports(client)) == (before, ports_before)

    server = w.wait(client, w.boot(client, flavor, image, [{"uuid": net}]))
    assert server["status"] == "ACTIVE", server
    assert server["OS-EXT-SRV-ATTR:host"] == chosen["host"]
    held = w.allocations(client, server["id"])
    assert set(held) == set(chosen["allocations"])
    for rp, body in chosen["allocations"].items():
        assert held[rp]["resources"] == body["resources"]
    (made,) = w.ok(client.get(f"/networking/v2.0/ports?device_id={server['id']}"))["ports"]
    assert list(made["binding:profile"]["allocation"].values()) == [port["provider"]]


def test_the_room_left_is_counted_per_cell_and_zone(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET)
    _zone(client, "far", "az2")
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    room = _ask(client, _body(flavor, image, [{"uuid": net}]))["capacity"]
    assert (room["instances"], room["exact"], room["together"]) == (9, True, False)
    assert room["cells"] == {"cell1": 6, "cell2": 3}
    assert room["availability_zones"] == {"az2": 3, "nova": 6}
    assert {h["host"]: h["instances"] for h in room["hosts"]} == {"big": 3, "small": 3, "far": 3}

    w.wait(client, w.boot(client, flavor, image, [{"uuid": net}]))
    room = _ask(client, _body(flavor, image, [{"uuid": net}]))["capacity"]
    assert room["instances"] == 8
    assert {h["host"]: h["instances"] for h in room["hosts"]} == {"big": 2, "small": 3, "far": 3}
    # Without the port, memory limits instead: (16384 - 512) // 2048 = 7 on the small hosts.
    room = _ask(client, _body(flavor, image, "none"))["capacity"]
    assert {h["host"]: h["instances"] for h in room["hosts"]} == {
        "big": 14, "small": 7, "far": 7,
    }  # fmt: skip


def test_several_instances_and_an_existing_port(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    asked = _ask(client, _body(flavor, image, [{"uuid": net}], count=4))
    assert asked["count"] == 4 and asked["fits"]
    hosts = [i["host"] for i in asked["instances"]]
    # Three fill big's bridge; small and far weigh the same, so the fourth's seed picks.
    assert hosts[:3] == ["big"] * 3 and hosts[3] in ("small", "far"), hosts
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": {"network_id": net}}))["port"]
    asked = _ask(client, _body(flavor, image, [{"port": port["id"]}]))
    assert asked["instances"][0]["ports"][0]["port_id"] == port["id"]
    group = asked["instances"][0]["ports"][0]["request_groups"][0]
    assert group["id"] == port["resource_request"]["request_groups"][0]["id"]
    assert w.ok(client.get(f"/networking/v2.0/ports/{port['id']}"))["port"]["device_id"] == ""


def test_nothing_fits_explains_why(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    w.ok(client.put(f"/networking/v2.0/networks/{net}", json={
        "network": {"qos_policy_id": w.bandwidth_policy(client, 50_000)}}))  # fmt: skip
    asked = _ask(client, _body(flavor, image, [{"uuid": net}]))
    assert asked["fits"] is False and asked["instances"] == []
    assert asked["message"].startswith("No valid host was found. 0/3 hosts are available")
    assert "no provider has 50000 kbps of egress bandwidth" in asked["message"]
    short = [g for g in asked["diagnosis"]["groups"] if not g["met_alone"]]
    assert [s["code"] for g in short for s in g["shortfalls"]] == ["insufficient-resource"]
    assert asked["capacity"]["instances"] == 0


def test_a_member_sees_counts_not_hosts(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    asked = _ask(client, _body(flavor, image, [{"uuid": net}]), **{
        "x-auth-token": "alice:demo", "x-roles": "member"})  # fmt: skip
    assert set(asked) == {"fits", "count", "message", "capacity"}
    assert asked["capacity"] == {
        "instances": 9, "exact": True, "together": False, "availability_zones": {"nova": 9},
    }  # fmt: skip
    refused = client.post(WHAT_IF, json=_body(flavor, image, "none"),
                          headers={**w.COMPUTE, "x-auth-token": "bob:demo", "x-roles": "reader"})  # fmt: skip
    assert refused.status_code == 403, refused.text


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"count": 0}, "count"),
        ({"count": "2"}, "count"),
        ({"server": {"name": "vm"}}, "networks"),
        ({"server": {"name": "vm", "flavorRef": "nope", "imageRef": "x", "networks": "none"}},
         "flavorRef"),
        ({"os:scheduler_hints": {"group": "not-a-uuid"}}, "group"),
    ],
)  # fmt: skip
def test_bad_input_is_a_400(start_stack: StackFactory, change: dict[str, Any], words: str) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    body = {**_body(flavor, image, "none"), **change}
    answer = client.post(WHAT_IF, json=body, headers=w.COMPUTE)
    assert answer.status_code == 400, answer.text
    assert words in answer.json()["badRequest"]["message"]
    port_twice = _body(flavor, image, [{"port": "00000000-0000-0000-0000-000000000000"}], count=2)
    assert client.post(WHAT_IF, json=port_twice, headers=w.COMPUTE).status_code == 400


def test_the_berth_what_if_command_prints_it(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)

    def in_process(base_url: str, auth: httpx.Auth, timeout: float = 30.0) -> httpx.Client:
        assert base_url == "http://cloud/compute"
        return httpx.Client(
            transport=InProcessTransport(stack.app()), base_url="http://berth/compute", auth=auth
        )

    monkeypatch.setattr(http, "http_client", in_process)
    args = ["what-if", "--compute-url", "http://cloud/compute", "--flavor", flavor,
            "--image", image, "--network", net, "--count", "2"]  # fmt: skip
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "fits: 2 of 2" in out and "big" in out and "big:Open vSwitch agent:br-ex" in out
    assert "9 more fit" in out and "cell1" in out
    assert cli.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity"]["instances"] == 9

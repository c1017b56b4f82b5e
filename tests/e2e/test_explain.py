"""Every way Placement can find nothing for a server, named in its fault and in the admin
extension (``GET /os-berth-diagnosis/{server_id}``)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from berth import cli
from berth.common.inprocess import InProcessTransport
from berth.compute.clients import http
from tests.e2e import moving as mv
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

BRIDGE = {"physnets": ["public"], "egress_kbps": 10_000, "ingress_kbps": 10_000}
HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": BRIDGE}, "packet_rate_kpps": 1000},
}  # fmt: skip


def _failed(client: httpx.Client, server_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The server's fault (as an admin sees it) and its diagnosis from the extension."""
    server = w.wait(client, server_id)
    assert server["status"] == "ERROR", server
    diagnosis = w.ok(client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}"))["diagnosis"]
    return server["fault"], diagnosis


def _short(diagnosis: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(owner, code, shortfall) of every group that could not be met alone."""
    return [
        (g["owner"], s["code"], s)
        for g in diagnosis["groups"]
        if not g["met_alone"]
        for s in g["shortfalls"]
    ]


def _qos_port(client: httpx.Client, net: str, rule: str, body: dict[str, Any]) -> dict[str, Any]:
    policy = w.ok(client.post("/networking/v2.0/qos/policies",
                              json={"policy": {"name": rule, "shared": True}}))["policy"]  # fmt: skip
    w.ok(client.post(f"/networking/v2.0/qos/policies/{policy['id']}/{rule}s", json={rule: body}))
    port = {"network_id": net, "qos_policy_id": policy["id"]}
    return w.ok(client.post("/networking/v2.0/ports", json={"port": port}))["port"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("rule", "body", "rc", "kind", "unit"),
    [
        ("minimum_bandwidth_rule", {"min_kbps": 50_000, "direction": "egress"},
         "NET_BW_EGR_KILOBIT_PER_SEC", "egress bandwidth", "kbps"),
        ("minimum_bandwidth_rule", {"min_kbps": 50_000, "direction": "ingress"},
         "NET_BW_IGR_KILOBIT_PER_SEC", "ingress bandwidth", "kbps"),
        ("minimum_packet_rate_rule", {"min_kpps": 50_000, "direction": "any"},
         "NET_PACKET_RATE_KILOPACKET_PER_SEC", "packet rate (either direction)", "kpps"),
    ],
)  # fmt: skip
def test_a_port_asking_more_than_any_bridge_has_is_named(
    start_stack: StackFactory, rule: str, body: dict[str, Any], rc: str, kind: str, unit: str
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    port = _qos_port(client, net, rule, body)
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    amount = 50_000
    # Bandwidth comes from a bridge of a physical network; packet rate from the agent.
    physnet = "PUBLIC" if rc.startswith("NET_BW") else None
    expected = f"port {port['id']}: no provider has {amount} {unit} of {kind} ({rc})"
    expected += f" on physical network {physnet}" if physnet else ""
    assert expected in fault["details"], fault
    assert ("physical network" in fault["details"]) == bool(physnet)
    assert fault["message"].startswith("No valid host was found. 0/2 hosts are available")
    ((owner, code, shortfall),) = _short(diagnosis)
    assert (owner, code) == (port["id"], "insufficient-resource")
    assert (shortfall["subject"], shortfall["amount"]) == (rc, amount)
    assert shortfall["detail"].get("physical_network") == physnet
    (group,) = [g for g in diagnosis["groups"] if g["owner"] == port["id"]]
    assert group["port_id"] == port["id"] and group["request_group"]
    flavor_group = next(g for g in diagnosis["groups"] if g["owner"] == "flavor")
    assert flavor_group["met_alone"] is True
    assert (diagnosis["hosts"], diagnosis["placement_hosts"]) == (2, 0)


def _extra_specs(client: httpx.Client, flavor: str, specs: dict[str, str]) -> None:
    w.ok(client.post(f"/compute/v2.1/flavors/{flavor}/os-extra_specs", headers=w.COMPUTE,
                     json={"extra_specs": specs}))  # fmt: skip


def test_a_flavor_bigger_than_any_host_names_the_class_and_amount(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack, vcpus=64)  # 8 vCPUs x 4.0 = 32 at most
    net = w.network(client)
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"uuid": net}]))
    assert "flavor: no provider has 64 VCPU" in fault["message"], fault
    ((owner, code, shortfall),) = _short(diagnosis)
    assert (owner, code, shortfall["subject"], shortfall["amount"]) == (
        "flavor", "insufficient-resource", "VCPU", 64,
    )  # fmt: skip
    assert diagnosis["placement_shortfall"]["resources"] == {"VCPU": 2}


def test_a_required_trait_no_host_has_is_named(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    w.ok(client.put("/placement/traits/CUSTOM_FAST", headers=w.PLACEMENT))
    _extra_specs(client, flavor, {"trait:CUSTOM_FAST": "required"})
    net = w.network(client)
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"uuid": net}]))
    assert "flavor: no provider has trait CUSTOM_FAST" in fault["message"], fault
    assert [(o, c, s["subject"]) for o, c, s in _short(diagnosis)] == [
        ("flavor", "missing-trait", "CUSTOM_FAST")
    ]


def test_a_forbidden_trait_every_host_has_is_named(start_stack: StackFactory) -> None:
    slow = {**HOST, "traits": ["CUSTOM_SLOW"]}
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **slow}]})
    flavor, image = w.flavor_and_image(stack)
    _extra_specs(client, flavor, {"trait:CUSTOM_SLOW": "forbidden"})
    net = w.network(client)
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"uuid": net}]))
    assert "flavor: every provider with room has forbidden trait CUSTOM_SLOW" in fault["message"]
    assert [(o, c, s["subject"]) for o, c, s in _short(diagnosis)] == [
        ("flavor", "forbidden-trait", "CUSTOM_SLOW")
    ]


def test_a_port_on_a_physical_network_no_host_reaches_is_named(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    w.network(client)
    elsewhere = w.network(client, "physnet9", "10.9.0.0/24")
    port = _qos_port(client, elsewhere, "minimum_bandwidth_rule", {"min_kbps": 1000})
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    assert f"port {port['id']}: no provider has trait CUSTOM_PHYSNET_PHYSNET9" in fault["details"]
    assert [(o, c, s["subject"]) for o, c, s in _short(diagnosis)] == [
        (port["id"], "missing-trait", "CUSTOM_PHYSNET_PHYSNET9")
    ]


def test_an_availability_zone_without_room_is_named(start_stack: StackFactory) -> None:
    small = {**HOST, "vcpus": 1}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "small", **small}, {"name": "big", **HOST}]}
    )
    flavor, image = w.flavor_and_image(stack, vcpus=8)  # 1 vCPU x 4.0: too small
    net = w.network(client)
    aggregate = w.ok(client.post("/compute/v2.1/os-aggregates", headers=w.COMPUTE,
                                 json={"aggregate": {"name": "a", "availability_zone": "az-a"}}))  # fmt: skip
    w.ok(client.post(f"/compute/v2.1/os-aggregates/{aggregate['aggregate']['id']}/action",
                     headers=w.COMPUTE, json={"add_host": {"host": "small"}}))  # fmt: skip
    server_id = w.boot(client, flavor, image, [{"uuid": net}], availability_zone="az-a")
    fault, diagnosis = _failed(client, server_id)
    assert "flavor: no host in availability zone az-a has it" in fault["message"], fault
    ((owner, code, shortfall),) = _short(diagnosis)
    assert (owner, code, shortfall["detail"]) == (
        "flavor",
        "member-of",
        {"availability_zone": "az-a"},
    )


def test_disabled_hosts_are_named(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    (service,) = w.ok(client.get("/compute/v2.1/os-services", headers=w.COMPUTE))["services"]
    w.ok(client.put(f"/compute/v2.1/os-services/{service['id']}", headers=w.COMPUTE,
                    json={"status": "disabled"}))  # fmt: skip
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"uuid": net}]))
    assert "flavor: only disabled compute nodes have room for it" in fault["message"], fault
    assert [(o, c) for o, c, _ in _short(diagnosis)] == [("flavor", "disabled-hosts")]


def test_groups_that_fit_only_on_different_hosts_are_named(start_stack: StackFactory) -> None:
    # "cpu" has the vCPUs but a thin bridge, "net" the bandwidth but one vCPU.
    thin = {**HOST, "ovs": {"bridges": {"br-ex": {**BRIDGE, "egress_kbps": 1000}}}}
    fat = {**HOST, "vcpus": 1, "ovs": {"bridges": {"br-ex": {**BRIDGE, "egress_kbps": 100_000}}}}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cpu", **thin}, {"name": "net", **fat}]}
    )
    flavor, image = w.flavor_and_image(stack, vcpus=8)
    net = w.network(client)
    port = _qos_port(client, net, "minimum_bandwidth_rule", {"min_kbps": 50_000})
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    assert "no host fits them all together" in fault["message"], fault
    assert all(g["met_alone"] for g in diagnosis["groups"]) and len(diagnosis["groups"]) == 2
    assert [s["code"] for s in diagnosis["together"]] == ["groups-together"]


def test_a_routed_port_whose_segment_hosts_are_full_is_named(start_stack: StackFactory) -> None:
    rack = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 100}
    stack, client = start_stack({
        "cells": ["cell1"],
        "hosts": [{"name": "r1-", "count": 1, **rack, "vcpus": 1, "ovs": {"bridges": {"br-1": {"physnets": ["rack1"]}}}},
                  {"name": "r2-", "count": 1, **rack, "ovs": {"bridges": {"br-2": {"physnets": ["rack2"]}}}}],
    })  # fmt: skip
    flavor, image = w.flavor_and_image(stack, vcpus=8)
    net = w.ok(client.post("/networking/v2.0/networks", json={"network": {"name": "routed", "shared": True, "segments": [
        {"provider:network_type": "vlan", "provider:physical_network": "rack1", "provider:segmentation_id": 10},
        {"provider:network_type": "vlan", "provider:physical_network": "rack2", "provider:segmentation_id": 10},
    ]}}))["network"]  # fmt: skip
    segments = w.ok(client.get("/networking/v2.0/segments", params={"network_id": net["id"]}))
    seg = {s["physical_network"]: s["id"] for s in segments["segments"]}
    subnet = {}
    for physnet, cidr in (("rack1", "10.1.0.0/24"), ("rack2", "10.2.0.0/24")):
        subnet[physnet] = w.ok(client.post("/networking/v2.0/subnets", json={"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": cidr, "segment_id": seg[physnet]}}))["subnet"]["id"]  # fmt: skip
    stack.reporter.run_once()
    # The port has its address on rack1's subnet: it can only go where rack1 reaches.
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"subnet_id": subnet["rack1"]}]}}))["port"]  # fmt: skip
    fault, diagnosis = _failed(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    expected = f"flavor: no host reaching a segment of port {port['id']}'s network has it"
    assert expected in fault["details"], fault
    ((owner, code, shortfall),) = _short(diagnosis)
    assert (owner, code, shortfall["subject"]) == ("flavor", "member-of", seg["rack1"])
    assert shortfall["detail"] == {"port": port["id"]}
    # Counted over compute nodes only: the segments' providers are not hosts.
    assert diagnosis["hosts"] == 2
    assert diagnosis["placement_shortfall"]["resources"] == {"VCPU": 1}


def test_a_routed_network_without_free_addresses_fails_before_scheduling(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [
        {"name": "r1-", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
         "ovs": {"bridges": {"br-1": {"physnets": ["rack1"]}}}}]})  # fmt: skip
    flavor, image = w.flavor_and_image(stack)
    net = w.ok(client.post("/networking/v2.0/networks", json={"network": {"name": "routed", "shared": True, "segments": [
        {"provider:network_type": "vlan", "provider:physical_network": "rack1", "provider:segmentation_id": 10},
        {"provider:network_type": "vlan", "provider:physical_network": "rack2", "provider:segmentation_id": 10},
    ]}}))["network"]  # fmt: skip
    (seg,) = [s["id"] for s in w.ok(client.get("/networking/v2.0/segments", params={
        "network_id": net["id"]}))["segments"] if s["physical_network"] == "rack1"]  # fmt: skip
    sub = w.ok(client.post("/networking/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.1.0.0/30", "segment_id": seg}}))["subnet"]  # fmt: skip
    w.ok(client.post("/networking/v2.0/ports", json={"port": {
        "network_id": net["id"], "fixed_ips": [{"subnet_id": sub["id"]}]}}))  # fmt: skip
    w.ok(client.post("/networking/v2.0/ports", json={"port": {"network_id": net["id"]}}))
    server_id = w.boot(client, flavor, image, [{"uuid": net["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ERROR"
    assert f"No segment of network {net['id']} has a free IP address" in server["fault"]["details"]
    # Never scheduled: no diagnosis to show.
    answer = client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}")
    assert answer.status_code == 404, answer.text


def test_a_filter_removing_hosts_is_named_with_its_reasons(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    group = w.ok(client.post("/compute/v2.1/os-server-groups", headers=w.COMPUTE, json={
        "server_group": {"name": "apart", "policy": "anti-affinity"}}))["server_group"]  # fmt: skip

    def boot(name: str) -> str:
        body = {"server": {"name": name, "flavorRef": flavor, "imageRef": image,
                           "networks": [{"uuid": net}]},
                "os:scheduler_hints": {"group": group["id"]}}  # fmt: skip
        answer = client.post("/compute/v2.1/servers", json=body, headers=w.COMPUTE)
        return str(w.ok(answer)["server"]["id"])

    assert w.wait(client, boot("a"))["status"] == "ACTIVE"
    fault, diagnosis = _failed(client, boot("b"))
    assert "ServerGroupAntiAffinityFilter removed 1 (host-in-group: 1)" in fault["message"], fault
    assert diagnosis["placement_hosts"] == 1 and diagnosis["groups"] == []
    assert diagnosis["stages"] == [
        {"name": "ServerGroupAntiAffinityFilter", "removed": 1, "reasons": {"host-in-group": 1}}
    ]


def test_the_diagnosis_is_for_admins_only(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **HOST}]})
    flavor, image = w.flavor_and_image(stack, vcpus=64)
    net = w.network(client)
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    assert w.wait(client, server_id)["status"] == "ERROR"
    member = {"x-auth-token": "member"}
    answer = client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}", headers=member)
    assert answer.status_code == 403, answer.text
    unknown = client.get("/compute/v2.1/os-berth-diagnosis/no-such-server")
    assert unknown.status_code == 404 and "itemNotFound" in unknown.text


def test_the_berth_diagnosis_command_prints_it(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    port = _qos_port(client, net, "minimum_bandwidth_rule", {"min_kbps": 50_000})
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    assert w.wait(client, server_id)["status"] == "ERROR"

    def in_process(base_url: str, auth: httpx.Auth, timeout: float = 30.0) -> httpx.Client:
        assert base_url == "http://cloud/compute"
        return httpx.Client(
            transport=InProcessTransport(stack.app()), base_url="http://berth/compute", auth=auth
        )

    monkeypatch.setattr(http, "http_client", in_process)
    monkeypatch.setenv("COLUMNS", "400")
    assert cli.main(["diagnosis", server_id, "--compute-url", "http://cloud/compute"]) == 0
    printed = capsys.readouterr().out
    assert f"server {server_id}" in printed
    assert port["id"] in printed and "no provider has 50000 kbps of egress bandwidth" in printed
    assert (
        cli.main(["diagnosis", server_id, "--compute-url", "http://cloud/compute", "--json"]) == 0
    )
    document = json.loads(capsys.readouterr().out)
    assert document["server_id"] == server_id and document["groups"][1]["owner"] == port["id"]
    assert cli.main(["diagnosis", "nope", "--compute-url", "http://cloud/compute"]) == 1
    assert "404" in capsys.readouterr().err


def test_a_resize_that_fits_nowhere_keeps_its_diagnosis(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    bigger, _ = w.flavor_and_image(stack, vcpus=64)
    net = w.network(client)
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    assert client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}").status_code == 404
    mv.action(client, server_id, {"resize": {"flavorRef": bigger}})
    mv.wait_migration(client, server_id, "error")
    mv.wait_status(client, server_id, "ACTIVE")
    diagnosis = w.ok(client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}"))["diagnosis"]
    assert "flavor: no provider has 64 VCPU" in diagnosis["fault_message"]
    assert [(o, c, s["amount"]) for o, c, s in _short(diagnosis)] == [
        ("flavor", "insufficient-resource", 64)
    ]


def test_a_live_migration_that_fits_nowhere_keeps_its_diagnosis(start_stack: StackFactory) -> None:
    # Two hosts, the other one too small for the flavor.
    small = {**HOST, "vcpus": 1}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "big", **HOST}, {"name": "small", **small}]}
    )
    flavor, image = w.flavor_and_image(stack, vcpus=8)
    net = w.network(client)
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    assert w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"] == "big"
    mv.action(client, server_id, {"os-migrateLive": {"host": None, "block_migration": "auto"}})
    mv.wait_migration(client, server_id, "error")
    mv.wait_status(client, server_id, "ACTIVE")
    diagnosis = w.ok(client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}"))["diagnosis"]
    assert diagnosis["fault_message"].startswith("No valid host was found.")
    # Placement offers only the source (the other host is too small); it is not a destination.
    assert diagnosis["placement_hosts"] == 1 and diagnosis["groups"] == []
    assert diagnosis["stages"] == [
        {"name": "RequestedDestinationFilter", "removed": 1, "reasons": {"ignored-host": 1}}
    ]

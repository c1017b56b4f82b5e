"""Booting servers with the network in the loop, end to end on the all-in-one stack."""

from __future__ import annotations

from typing import Any

from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip


def test_a_port_with_a_bandwidth_policy_lands_on_its_bridge(start_stack: StackFactory) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    policy = w.bandwidth_policy(client, 4000)
    port = w.ok(
        client.post(
            "/networking/v2.0/ports", json={"port": {"network_id": net, "qos_policy_id": policy}}
        )
    )["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    host = server["OS-EXT-SRV-ATTR:host"]
    held = w.allocations(client, server_id)
    bridges = [rp for rp in held if w.provider_name(client, rp).endswith(":br-ex")]
    assert (
        len(bridges) == 1
        and w.provider_name(client, bridges[0]) == f"{host}:Open vSwitch agent:br-ex"
    )
    assert held[bridges[0]]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 4000}
    bound = w.ok(client.get(f"/networking/v2.0/ports/{port['id']}"))["port"]
    (group,) = bound["resource_request"]["request_groups"]
    assert bound["binding:profile"]["allocation"] == {group["id"]: bridges[0]}
    assert (bound["binding:host_id"], bound["status"]) == (host, "ACTIVE")
    assert server["addresses"]["public"][0]["addr"] == bound["fixed_ips"][0]["ip_address"]


def test_a_network_with_a_bandwidth_policy_gets_a_port_made_before_scheduling(
    start_stack: StackFactory,
) -> None:
    # cn1's bridge is too small for the policy: only cn2 can serve it.
    small = {
        **OVS_HOST,
        "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1000}}},
    }
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn1", **small}, {"name": "cn2", **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    policy = w.bandwidth_policy(client, 5000)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    server = w.wait(client, server_id)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "cn2"), server.get(
        "fault"
    )
    (port,) = w.ok(client.get("/networking/v2.0/ports", params={"device_id": server_id}))["ports"]
    bridge = next(
        rp
        for rp in w.allocations(client, server_id)
        if w.provider_name(client, rp) == "cn2:Open vSwitch agent:br-ex"
    )
    assert list(port["binding:profile"]["allocation"].values()) == [bridge]
    # Deleting the server deletes the port Berth made, and gives the bandwidth back.
    assert client.delete(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE).status_code == 204
    w.wait_gone(client, server_id)
    assert (
        w.ok(client.get("/networking/v2.0/ports", params={"device_id": server_id}))["ports"] == []
    )
    assert w.allocations(client, server_id) == {}


def test_no_capacity_puts_the_server_in_cell0_and_gives_its_ports_back(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn1", **OVS_HOST}]})
    flavor, image = w.flavor_and_image(stack, vcpus=64)  # 8 vCPUs x 4.0 = 32 at most
    net = w.network(client)
    mine = w.ok(client.post("/networking/v2.0/ports", json={"port": {"network_id": net}}))["port"]
    server_id = w.boot(client, flavor, image, [{"port": mine["id"]}, {"uuid": net}])
    server = w.wait(client, server_id)
    assert server["status"] == "ERROR"
    assert "insufficient VCPU: 1" in server["fault"]["message"], server["fault"]
    assert w.cell_of(stack, server_id) == "cell0"
    ports = w.ok(client.get("/networking/v2.0/ports", params={"network_id": net}))["ports"]
    assert [p["id"] for p in ports] == [mine["id"]]  # the one Berth made is gone
    assert (ports[0]["device_id"], ports[0]["binding:host_id"]) == ("", "")


def test_several_servers_of_one_request_are_scheduled_in_one_call(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    policy = w.bandwidth_policy(client, 2000)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )
    body = {"name": "many", "flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]}
    body.update(min_count=3, max_count=3, return_reservation_id=True)
    made = client.post("/compute/v2.1/servers", json={"server": body}, headers=w.COMPUTE)
    reservation_id = w.ok(made)["reservation_id"]
    servers = w.ok(client.get("/compute/v2.1/servers", headers=w.COMPUTE))["servers"]
    assert sorted(s["name"] for s in servers) == ["many-1", "many-2", "many-3"]
    assert len(stack.scheduler.latencies) <= 1  # not yet answered, or answered once
    for server in servers:
        done = w.wait(client, server["id"])
        assert done["status"] == "ACTIVE", done.get("fault")
        assert done["OS-EXT-SRV-ATTR:reservation_id"] == reservation_id
        (port,) = w.ok(client.get("/networking/v2.0/ports", params={"device_id": server["id"]}))[
            "ports"
        ]
        (group,) = port["resource_request"]["request_groups"]
        (provider,) = port["binding:profile"]["allocation"].values()
        assert list(port["binding:profile"]["allocation"]) == [group["id"]]
        assert w.allocations(client, server["id"])[provider]["resources"] == {
            "NET_BW_EGR_KILOBIT_PER_SEC": 2000
        }
    assert len(stack.scheduler.latencies) == 1
    w.boot(client, flavor, image, [{"uuid": net}], name="other")
    by_reservation = {"reservation_id": reservation_id}
    found = w.ok(client.get("/compute/v2.1/servers", params=by_reservation, headers=w.COMPUTE))
    assert sorted(s["id"] for s in found["servers"]) == sorted(s["id"] for s in servers)


def test_flavor_trait_and_resource_extra_specs_steer_the_server(start_stack: StackFactory) -> None:
    fast = {**OVS_HOST, "traits": ["CUSTOM_FAST"]}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "plain", **OVS_HOST}, {"name": "fast", **fast}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    specs = {"trait:CUSTOM_FAST": "required", "resources:VCPU": "3"}
    w.ok(
        client.post(
            f"/compute/v2.1/flavors/{flavor}/os-extra_specs",
            headers=w.COMPUTE,
            json={"extra_specs": specs},
        )
    )
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    server = w.wait(client, server_id)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "fast"), server.get(
        "fault"
    )
    node = stack.agents["fast"].node_uuid
    assert w.allocations(client, server_id)[node]["resources"]["VCPU"] == 3


def test_same_host_and_different_host_hints_follow_the_named_servers(
    start_stack: StackFactory,
) -> None:
    # The scheduler reads only the servers a request names, not every server of the cell.
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    first = w.wait(client, w.boot(client, flavor, image, [{"uuid": net}], name="first"))
    others = [
        w.wait(client, w.boot(client, flavor, image, [{"uuid": net}], name=f"other{i}"))
        for i in range(3)
    ]
    host = first["OS-EXT-SRV-ATTR:host"]

    def booted_with(hints: dict[str, list[str]]) -> dict[str, Any]:
        body = {
            "server": {"name": "hinted", "flavorRef": flavor, "imageRef": image,
                       "networks": [{"uuid": net}]},
            "os:scheduler_hints": hints,
        }  # fmt: skip
        server_id = w.ok(client.post("/compute/v2.1/servers", json=body))["server"]["id"]
        return w.wait(client, server_id)

    for _ in range(2):
        together = booted_with({"same_host": [first["id"]]})
        assert (together["status"], together["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", host)
        apart = booted_with({"different_host": [first["id"]]})
        assert apart["status"] == "ACTIVE"
        assert apart["OS-EXT-SRV-ATTR:host"] != host
    hosts_of_others = {s["OS-EXT-SRV-ATTR:host"] for s in others}
    everywhere = booted_with({"different_host": [first["id"], *(s["id"] for s in others)]})
    if hosts_of_others | {host} == {"cn1", "cn2", "cn3"}:
        assert everywhere["status"] == "ERROR"
        assert "DifferentHostFilter" in everywhere["fault"]["message"]
    else:
        assert everywhere["OS-EXT-SRV-ATTR:host"] not in hosts_of_others | {host}

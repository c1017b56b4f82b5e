"""Booting servers with the network in the loop, end to end on the all-in-one stack."""

from __future__ import annotations

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

"""Ports on SR-IOV physical functions and on routed networks, end to end."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from berth.compute.db.cell_schema import pci_devices
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

SRIOV_HOST = {
    "vcpus": 16, "memory_mb": 32768, "disk_gb": 100,
    "sriov": {"pfs": {
        "ens1f0": {"physnet": "physnet1", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000},
        "ens1f1": {"physnet": "physnet2", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000},
    }},
}  # fmt: skip


def _direct_port(client: Any, net: str, policy: str) -> dict[str, Any]:
    body = {"network_id": net, "qos_policy_id": policy, "binding:vnic_type": "direct"}
    return w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]  # type: ignore[no-any-return]


def test_two_ports_on_two_physnets_land_on_their_pfs_with_vfs_from_them(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "sr", "count": 2, **SRIOV_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net1 = w.network(client, "physnet1", "10.1.0.0/24")
    net2 = w.network(client, "physnet2", "10.2.0.0/24")
    policy = w.bandwidth_policy(client, 3000)
    p1, p2 = _direct_port(client, net1, policy), _direct_port(client, net2, policy)
    server_id = w.boot(client, flavor, image, [{"port": p1["id"]}, {"port": p2["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    host = server["OS-EXT-SRV-ATTR:host"]
    for port, pf in ((p1, "ens1f0"), (p2, "ens1f1")):
        bound = w.ok(client.get(f"/networking/v2.0/ports/{port['id']}"))["port"]
        (provider,) = bound["binding:profile"]["allocation"].values()
        assert w.provider_name(client, provider) == f"{host}:NIC Switch agent:{pf}"
        assert bound["binding:vif_type"] == "hw_veb" and bound["status"] == "ACTIVE"
    cell = stack.compute.cells.cell_of_host(host)
    assert cell is not None
    with stack.compute.cells.database(cell).read() as conn:
        held = conn.execute(
            sa.select(pci_devices.c.parent_addr, pci_devices.c.status).where(
                pci_devices.c.instance_uuid == server_id
            )
        ).all()
        parents = dict(conn.execute(
            sa.select(pci_devices.c.address, pci_devices.c.dev_name).where(pci_devices.c.dev_type == "type-PF")
        ).all())  # fmt: skip
    assert sorted(parents[parent] for parent, _ in held) == ["ens1f0", "ens1f1"]
    assert {status for _, status in held} == {"allocated"}


def test_routed_network_ports_go_where_their_segment_has_addresses(
    start_stack: StackFactory,
) -> None:
    rack = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 100}
    stack, client = start_stack({
        "cells": ["cell1"],
        "hosts": [{"name": "r1-", "count": 2, **rack, "ovs": {"bridges": {"br-1": {"physnets": ["rack1"]}}}},
                  {"name": "r2-", "count": 2, **rack, "ovs": {"bridges": {"br-2": {"physnets": ["rack2"]}}}}],
    })  # fmt: skip
    flavor, image = w.flavor_and_image(stack)
    net = w.ok(client.post("/networking/v2.0/networks", json={"network": {"name": "routed", "shared": True, "segments": [
        {"provider:network_type": "vlan", "provider:physical_network": "rack1", "provider:segmentation_id": 10},
        {"provider:network_type": "vlan", "provider:physical_network": "rack2", "provider:segmentation_id": 10},
    ]}}))["network"]  # fmt: skip
    segments = w.ok(client.get("/networking/v2.0/segments", params={"network_id": net["id"]}))[
        "segments"
    ]
    by_physnet = {s["physical_network"]: s["id"] for s in segments}
    # rack1's subnet has one address; rack2's has plenty.
    for physnet, cidr in (("rack1", "10.1.0.0/30"), ("rack2", "10.2.0.0/24")):
        w.ok(client.post("/networking/v2.0/subnets", json={"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": cidr, "segment_id": by_physnet[physnet]}}))  # fmt: skip
    stack.reporter.run_once()
    hosts = []
    for i in range(3):
        server_id = w.boot(client, flavor, image, [{"uuid": net["id"]}], name=f"vm{i}")
        server = w.wait(client, server_id)
        assert server["status"] == "ACTIVE", server.get("fault")
        hosts.append(server["OS-EXT-SRV-ATTR:host"])
        (port,) = w.ok(client.get("/networking/v2.0/ports", params={"device_id": server_id}))[
            "ports"
        ]
        subnet_of_segment = port["fixed_ips"][0]["ip_address"].split(".")[1]
        assert (
            subnet_of_segment == server["OS-EXT-SRV-ATTR:host"][1]
        )  # r1- hosts get 10.1.x, r2- 10.2.x
        stack.reporter.run_once()
    # rack1 had one address: at most one server there, the rest in rack2.
    assert (
        sum(h.startswith("r1-") for h in hosts) <= 1
        and sum(h.startswith("r2-") for h in hosts) >= 2
    )


def test_a_refused_binding_moves_the_build_to_an_alternate(start_stack: StackFactory) -> None:
    # rack1's hosts are the scheduler's first choice (more memory), and its segment still shows
    # free IPv4 addresses, but its IPv6 subnet is full: the binding there is refused (a deferred
    # port needs an address of each version), and the build goes to an alternate in rack2.
    rack = {"vcpus": 8, "disk_gb": 100}
    stack, client = start_stack({
        "cells": ["cell1"],
        "hosts": [{"name": "r1-", "count": 1, **rack, "memory_mb": 65536, "ovs": {"bridges": {"br-1": {"physnets": ["rack1"]}}}},
                  {"name": "r2-", "count": 2, **rack, "memory_mb": 16384, "ovs": {"bridges": {"br-2": {"physnets": ["rack2"]}}}}],
    }, max_attempts=3)  # fmt: skip
    flavor, image = w.flavor_and_image(stack)
    net = w.ok(client.post("/networking/v2.0/networks", json={"network": {"name": "routed", "shared": True, "segments": [
        {"provider:network_type": "vlan", "provider:physical_network": "rack1", "provider:segmentation_id": 10},
        {"provider:network_type": "vlan", "provider:physical_network": "rack2", "provider:segmentation_id": 10},
    ]}}))["network"]  # fmt: skip
    segments = w.ok(client.get("/networking/v2.0/segments", params={"network_id": net["id"]}))[
        "segments"
    ]
    seg = {s["physical_network"]: s["id"] for s in segments}
    subnets = [("rack1", 4, "10.1.0.0/24"), ("rack1", 6, "2001:db8:1::/126"), ("rack2", 4, "10.2.0.0/24"),
               ("rack2", 6, "2001:db8:2::/64")]  # fmt: skip
    ids = {}
    for physnet, version, cidr in subnets:
        ids[cidr] = w.ok(client.post("/networking/v2.0/subnets", json={"subnet": {
            "network_id": net["id"], "ip_version": version, "cidr": cidr, "segment_id": seg[physnet]}}))["subnet"]["id"]  # fmt: skip
    for _ in range(2):  # the /126 has two addresses to give
        w.ok(client.post("/networking/v2.0/ports", json={"port": {
            "network_id": net["id"], "fixed_ips": [{"subnet_id": ids["2001:db8:1::/126"]}]}}))  # fmt: skip
    stack.reporter.run_once()
    server_id = w.boot(client, flavor, image, [{"uuid": net["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    assert server["OS-EXT-SRV-ATTR:host"].startswith("r2-")
    held = {w.provider_name(client, rp) for rp in w.allocations(client, server_id)}
    assert held == {server["OS-EXT-SRV-ATTR:host"]}  # the refused host's claim was released

"""Many boots at once against limited capacity: exactly as many succeed as fit, nothing is
over-committed, the rest fail cleanly, and the audit finds nothing leaked."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from berth.compute.audit import audit
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "vcpus": 4, "memory_mb": 65536, "disk_gb": 1000,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 100000, "ingress_kbps": 100000}}},
}  # fmt: skip


def test_concurrent_boots_fill_exactly_the_capacity(start_stack: StackFactory) -> None:
    # 3 hosts x 4 vCPUs x 4.0 = 48 vCPUs; each server takes 4: exactly 12 fit, 20 are asked for.
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **HOST}]}, host_subset_size=2
    )
    flavor, image = w.flavor_and_image(stack, vcpus=4, ram=512, disk=1)
    net = w.network(client, cidr="10.0.0.0/22")
    policy = w.bandwidth_policy(client, 1000)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )

    def boot(i: int) -> str:
        return w.boot(client, flavor, image, [{"uuid": net}], name=f"vm{i}")

    with ThreadPoolExecutor(8) as pool:
        servers = list(pool.map(boot, range(20)))
    states = [w.wait(client, s, timeout=60) for s in servers]
    active = [s for s in states if s["status"] == "ACTIVE"]
    failed = [s for s in states if s["status"] == "ERROR"]
    assert (len(active), len(failed)) == (12, 8)
    assert all("No valid host" in s["fault"]["message"] for s in failed)
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()
    ports = w.ok(client.get("/networking/v2.0/ports", params={"network_id": net}))["ports"]
    assert len(ports) == 12  # those of the failed servers were deleted
    # Deleting everything leaves nothing behind.
    for server in states:
        assert (
            client.delete(f"/compute/v2.1/servers/{server['id']}", headers=w.COMPUTE).status_code
            == 204
        )
    for server in states:
        w.wait_gone(client, server["id"])
    assert w.ok(client.get("/networking/v2.0/ports", params={"network_id": net}))["ports"] == []
    assert audit(stack.compute.cells, stack.placement_client, stack.network_client).clean
    for host in ("cn1", "cn2", "cn3"):
        node = stack.agents[host].node_uuid
        usage = w.ok(
            client.get(f"/placement/resource_providers/{node}/usages", headers=w.PLACEMENT)
        )["usages"]
        assert not any(usage.values()), (host, usage)

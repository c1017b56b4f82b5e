"""Availability zones (aggregates mirrored into Placement) and disabled compute services, end to
end; and a server deleted while it is still a BuildRequest gives everything back."""

from __future__ import annotations

import time

from berth.compute.audit import audit
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "vcpus": 8,
    "memory_mb": 16384,
    "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"]}}},
}


def test_a_zone_confines_the_server_and_a_disabled_host_is_skipped(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    aggregate = w.ok(client.post("/compute/v2.1/os-aggregates", headers=w.COMPUTE,
                                 json={"aggregate": {"name": "rack-a", "availability_zone": "az-a"}}))["aggregate"]  # fmt: skip
    for host in ("cn2", "cn3"):
        w.ok(client.post(f"/compute/v2.1/os-aggregates/{aggregate['id']}/action", headers=w.COMPUTE,
                         json={"add_host": {"host": host}}))  # fmt: skip
    services = w.ok(client.get("/compute/v2.1/os-services", headers=w.COMPUTE))["services"]
    cn3 = next(s for s in services if s["host"] == "cn3")
    w.ok(
        client.put(
            f"/compute/v2.1/os-services/{cn3['id']}", headers=w.COMPUTE, json={"status": "disabled"}
        )
    )
    for i in range(3):
        server_id = w.boot(
            client, flavor, image, [{"uuid": net}], name=f"vm{i}", availability_zone="az-a"
        )
        server = w.wait(client, server_id)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "cn2"), server.get(
            "fault"
        )
        assert server["OS-EXT-AZ:availability_zone"] == "az-a"
    # The scheduler sees a service's change at its next request (what it knew of each host is
    # made again when the host's rows changed): cn3 back, cn2 out.
    cn2 = next(s for s in services if s["host"] == "cn2")
    for service, status in ((cn3, "enabled"), (cn2, "disabled")):
        w.ok(
            client.put(
                f"/compute/v2.1/os-services/{service['id']}", headers=w.COMPUTE,
                json={"status": status},
            )
        )  # fmt: skip
    server_id = w.boot(client, flavor, image, [{"uuid": net}], name="vm3", availability_zone="az-a")
    server = w.wait(client, server_id)
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "cn3")


def test_deleting_a_server_before_it_has_a_host_leaves_nothing(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    for i in range(5):
        server_id = w.boot(client, flavor, image, [{"uuid": net}], name=f"vm{i}")
        assert client.delete(
            f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE
        ).status_code in (204, 409)
        w.wait_gone(client, server_id)
    deadline = time.monotonic() + 20
    while True:
        report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
        leftovers = w.ok(client.get("/networking/v2.0/ports", params={"network_id": net}))["ports"]
        if report.clean and not leftovers:
            break
        assert time.monotonic() < deadline, (report.lines(), leftovers)
        time.sleep(0.1)

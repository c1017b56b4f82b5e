"""Nova's floating IP proxies (os-floating-ips, addFloatingIp, removeFloatingIp) on the
all-in-one stack: the compute API allocates, associates and releases the network service's
floating IPs, and refuses them from the microversions that removed them."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "name": "cn", "count": 1, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"]}}},
}  # fmt: skip
OLD = {"openstack-api-version": "compute 2.35"}
ACTIONS_OLD = {"openstack-api-version": "compute 2.43"}


def _post(client: httpx.Client, path: str, kind: str, **body: Any) -> dict[str, Any]:
    return w.ok(client.post(f"/networking/v2.0/{path}", json={kind: body}))[kind]  # type: ignore[no-any-return]


def _action(client: httpx.Client, server_id: str, **body: Any) -> httpx.Response:
    return client.post(f"/compute/v2.1/servers/{server_id}/action", json=body, headers=ACTIONS_OLD)


def test_a_server_gets_a_floating_ip_through_the_proxies(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [HOST]})
    public = _post(client, "networks", "network", name="ext", **{"router:external": True})
    _post(
        client, "subnets", "subnet", network_id=public["id"], ip_version=4, cidr="198.51.100.0/28"
    )
    private = w.network(client, cidr="10.9.0.0/24")
    (subnet,) = w.ok(client.get("/networking/v2.0/subnets", params={"network_id": private}))[
        "subnets"
    ]
    router = _post(client, "routers", "router", external_gateway_info={"network_id": public["id"]})
    plugged = client.put(
        f"/networking/v2.0/routers/{router['id']}/add_router_interface",
        json={"subnet_id": subnet["id"]},
    )
    assert plugged.status_code == 200, plugged.text
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, [{"uuid": private}])
    assert w.wait(client, server_id)["status"] == "ACTIVE"

    missing = client.post("/compute/v2.1/os-floating-ips", json={"pool": "nowhere"}, headers=OLD)
    assert missing.status_code == 404, missing.text
    # Without a body, the pool is the first external network.
    bodiless = client.post("/compute/v2.1/os-floating-ips", headers=OLD)
    assert bodiless.status_code == 200, bodiless.text
    assert bodiless.json()["floating_ip"]["pool"] == "ext"
    released = client.delete(
        f"/compute/v2.1/os-floating-ips/{bodiless.json()['floating_ip']['id']}", headers=OLD
    )
    assert released.status_code == 202
    made = client.post("/compute/v2.1/os-floating-ips", json={"pool": "ext"}, headers=OLD)
    assert made.status_code == 200, made.text
    floating = made.json()["floating_ip"]
    assert floating["pool"] == "ext" and floating["instance_id"] is None
    assert _action(client, server_id, addFloatingIp={"address": floating["ip"]}).status_code == 202
    shown = w.ok(client.get(f"/compute/v2.1/os-floating-ips/{floating['id']}", headers=OLD))
    assert shown["floating_ip"]["instance_id"] == server_id
    assert shown["floating_ip"]["fixed_ip"].startswith("10.9.0.")
    listed = w.ok(client.get("/compute/v2.1/os-floating-ips", headers=OLD))["floating_ips"]
    assert [f["id"] for f in listed] == [floating["id"]]
    # The network service says the same.
    fip = w.ok(client.get(f"/networking/v2.0/floatingips/{floating['id']}"))["floatingip"]
    assert fip["router_id"] == router["id"]
    unknown = _action(client, server_id, addFloatingIp={"address": "0.0.0.0"})
    assert unknown.status_code == 404, unknown.text
    assert (
        _action(client, server_id, removeFloatingIp={"address": floating["ip"]}).status_code == 202
    )
    again = _action(client, server_id, removeFloatingIp={"address": floating["ip"]})
    assert again.status_code == 409, again.text
    gone = client.delete(f"/compute/v2.1/os-floating-ips/{floating['id']}", headers=OLD)
    assert gone.status_code == 202
    assert (
        client.get(f"/compute/v2.1/os-floating-ips/{floating['id']}", headers=OLD).status_code
        == 404
    )
    # Removed at 2.36 (the paths) and 2.44 (the actions), as Nova's.
    assert client.get("/compute/v2.1/os-floating-ips", headers=w.COMPUTE).status_code == 404
    late = client.post(
        f"/compute/v2.1/servers/{server_id}/action",
        json={"addFloatingIp": {"address": floating["ip"]}},
        headers=w.COMPUTE,
    )
    assert late.status_code == 404

"""Helpers for end-to-end tests: set up networks, flavors and images, boot and wait."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.db import flavors, images

COMPUTE = {"openstack-api-version": "compute 2.64"}
PLACEMENT = {"openstack-api-version": "placement 1.39"}


def ok(answer: httpx.Response) -> Any:
    assert answer.is_success, (
        f"{answer.request.method} {answer.request.url}: {answer.status_code} {answer.text}"
    )
    return answer.json() if answer.content else None


def flavor_and_image(
    stack: Stack, vcpus: int = 2, ram: int = 2048, disk: int = 10
) -> tuple[str, str]:
    image_id = str(uuid.uuid4())
    flavor_id = f"test-{vcpus}-{ram}-{disk}"
    with stack.api_db.write() as conn:
        flavors.create(conn, flavor_id, flavor_id, vcpus, ram, disk)
        images.create(conn, image_id, {"name": f"image-{image_id[:8]}"})
    return flavor_id, image_id


def network(client: httpx.Client, physnet: str = "public", cidr: str = "192.0.2.0/24") -> str:
    net = ok(client.post("/networking/v2.0/networks", json={"network": {
        "name": physnet, "shared": True,
        "provider:network_type": "flat", "provider:physical_network": physnet}}))["network"]  # fmt: skip
    ok(client.post("/networking/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": cidr}}))  # fmt: skip
    return str(net["id"])


def bandwidth_policy(client: httpx.Client, kbps: int) -> str:
    policy = ok(
        client.post(
            "/networking/v2.0/qos/policies", json={"policy": {"name": f"bw{kbps}", "shared": True}}
        )
    )["policy"]
    ok(client.post(f"/networking/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                   json={"minimum_bandwidth_rule": {"min_kbps": kbps}}))  # fmt: skip
    return str(policy["id"])


def boot(
    client: httpx.Client, flavor: str, image: str, networks: Any, name: str = "vm", **extra: Any
) -> str:
    body = {
        "server": {
            "name": name,
            "flavorRef": flavor,
            "imageRef": image,
            "networks": networks,
            **extra,
        }
    }
    return str(ok(client.post("/compute/v2.1/servers", json=body, headers=COMPUTE))["server"]["id"])


def wait(client: httpx.Client, server_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The server once it is ACTIVE or ERROR."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=COMPUTE))["server"]
        if server["status"] in ("ACTIVE", "ERROR"):
            return server  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} still {server['status']} after {timeout} s")


def allocations(client: httpx.Client, server_id: str) -> dict[str, Any]:
    return ok(client.get(f"/placement/allocations/{server_id}", headers=PLACEMENT))["allocations"]  # type: ignore[no-any-return]


def provider_name(client: httpx.Client, uuid_: str) -> str:
    return str(ok(client.get(f"/placement/resource_providers/{uuid_}", headers=PLACEMENT))["name"])


def wait_gone(client: httpx.Client, server_id: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.get(f"/compute/v2.1/servers/{server_id}", headers=COMPUTE).status_code == 404:
            return
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} still there after {timeout} s")


def cell_of(stack: Stack, server_id: str) -> str:
    from berth.compute.db import cells

    with stack.api_db.read() as conn:
        mapping = cells.get_instance_mapping(conn, server_id)
    assert mapping is not None
    return str(mapping["cell_name"])

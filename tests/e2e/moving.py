"""What the tests of moving a server share: a fleet to move in, a QoS server to move, the
actions and the waits, and readings of who holds what (allocations, usages, bindings)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.heal import heal
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
MICROVERSION = {"openstack-api-version": "compute 2.64"}


def ovs_stack(
    start_stack: StackFactory, count: int = 3, **compute: Any
) -> tuple[Stack, httpx.Client]:
    return start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": count, **OVS_HOST}]}, **compute
    )


def qos_server(stack: Stack, client: httpx.Client, kbps: int = 4000) -> tuple[str, str, str]:
    """A server with a QoS port, ACTIVE: its id, the port's id and the flavor's."""
    flavor, image = w.flavor_and_image(stack)
    body = {
        "port": {"network_id": w.network(client), "qos_policy_id": w.bandwidth_policy(client, kbps)}
    }
    port = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return server_id, port["id"], flavor


def action(client: httpx.Client, server_id: str, body: Any, status: int = 202) -> httpx.Response:
    answer = client.post(
        f"/compute/v2.1/servers/{server_id}/action", json=body, headers=MICROVERSION
    )
    assert answer.status_code == status, answer.text
    return answer


def wait_status(
    client: httpx.Client, server_id: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=MICROVERSION))[
            "server"
        ]
        if server["status"] == status and server["OS-EXT-STS:task_state"] is None:
            return server  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"{server_id} is {server['status']}, not {status}"
        time.sleep(0.05)


def migrations(client: httpx.Client, server_id: str) -> list[dict[str, Any]]:
    headers = {"openstack-api-version": "compute 2.59"}
    answer = w.ok(
        client.get(
            "/compute/v2.1/os-migrations", params={"instance_uuid": server_id}, headers=headers
        )
    )
    return answer["migrations"]  # type: ignore[no-any-return]


def wait_migration(client: httpx.Client, server_id: str, status: str) -> None:
    """Until the server's newest migration has ``status``."""
    deadline = time.monotonic() + 30
    while True:
        found = migrations(client, server_id)
        if found and found[0]["status"] == status:
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.05)


def held(client: httpx.Client, consumer: str) -> dict[str, dict[str, int]]:
    """Provider name -> resources the consumer holds there."""
    return {
        w.provider_name(client, rp): a["resources"]
        for rp, a in w.allocations(client, consumer).items()
    }


def usages(client: httpx.Client) -> dict[str, dict[str, int]]:
    """Provider name -> its non-zero usages."""
    found = {}
    providers = w.ok(client.get("/placement/resource_providers", headers=w.PLACEMENT))[
        "resource_providers"
    ]
    for provider in providers:
        usages = w.ok(
            client.get(
                f"/placement/resource_providers/{provider['uuid']}/usages", headers=w.PLACEMENT
            )
        )["usages"]
        used = {rc: n for rc, n in usages.items() if n}
        if used:
            found[provider["name"]] = used
    return found


def total(*holdings: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {}
    for held in holdings:
        for provider, resources in held.items():
            for rc, amount in resources.items():
                total.setdefault(provider, {}).setdefault(rc, 0)
                total[provider][rc] += amount
    return total


def binding(client: httpx.Client, port_id: str) -> tuple[str, dict[str, str]]:
    """The host the port is bound to, and the provider names of its request groups."""
    port = w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]
    allocation = port["binding:profile"].get("allocation", {})
    return port["binding:host_id"], {g: w.provider_name(client, rp) for g, rp in allocation.items()}


def assert_clean(stack: Stack) -> None:
    """The audit finds nothing, and heal-allocations would change nothing."""
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()
    healed = heal(stack.compute.cells, stack.placement_client, stack.network_client, dry_run=True)
    assert (healed.actions, healed.failures) == ([], []), healed.actions


def events(client: httpx.Client, server_id: str, action: str) -> list[dict[str, Any]]:
    headers = {"openstack-api-version": "compute 2.62"}
    found = w.ok(
        client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions", headers=headers)
    )["instanceActions"]
    request_id = next(a["request_id"] for a in found if a["action"] == action)
    shown = w.ok(
        client.get(
            f"/compute/v2.1/servers/{server_id}/os-instance-actions/{request_id}", headers=headers
        )
    )
    return shown["instanceAction"]["events"]  # type: ignore[no-any-return]

"""``heal`` gives a booted QoS-port server back what Placement and its port lost."""

from __future__ import annotations

from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.heal import HealReport, heal
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip


def _booted(start_stack: StackFactory) -> tuple[Stack, httpx.Client, str, dict[str, Any]]:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    policy = w.bandwidth_policy(client, 4000)
    body = {"port": {"network_id": w.network(client), "qos_policy_id": policy}}
    port = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return stack, client, server_id, _port(client, port["id"])


def _port(client: httpx.Client, port_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]  # type: ignore[no-any-return]


def _resources(
    client: httpx.Client, server_id: str, held: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Provider -> resources (the providers' generations move with every write)."""
    found = w.allocations(client, server_id) if held is None else held
    return {rp: allocation["resources"] for rp, allocation in found.items()}


def _heal(stack: Stack, **options: Any) -> HealReport:
    return heal(stack.compute.cells, stack.placement_client, stack.network_client, **options)


def _assert_clean(stack: Stack) -> None:
    again = _heal(stack)
    assert (again.actions, again.failures) == ([], []), again.actions
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()


def test_a_deleted_allocation_is_made_again_with_the_ports_part(
    start_stack: StackFactory,
) -> None:
    stack, client, server_id, port = _booted(start_stack)
    before = w.allocations(client, server_id)
    w.ok(client.delete(f"/placement/allocations/{server_id}", headers=w.PLACEMENT))

    dry = _heal(stack, dry_run=True)
    assert (dry.allocations_created, dry.port_allocations_added, dry.failures) == (1, 1, [])
    assert w.allocations(client, server_id) == {}

    unknown = _heal(stack, instance="00000000-0000-4000-8000-000000000000")
    assert (unknown.checked, len(unknown.failures)) == (0, 1)
    healed = _heal(stack, instance=server_id)
    assert (healed.checked, healed.allocations_created, healed.port_allocations_added) == (1, 1, 1)
    assert healed.failures == []
    assert _resources(client, server_id) == _resources(client, server_id, before)
    (group,) = port["resource_request"]["request_groups"]
    (bridge,) = (rp for rp in before if w.provider_name(client, rp).endswith(":br-ex"))
    assert _port(client, port["id"])["binding:profile"]["allocation"] == {group["id"]: bridge}
    _assert_clean(stack)


def test_a_stripped_port_part_is_added_back(start_stack: StackFactory) -> None:
    stack, client, server_id, port = _booted(start_stack)
    before = w.allocations(client, server_id)
    consumer = w.ok(client.get(f"/placement/allocations/{server_id}", headers=w.PLACEMENT))
    flavor_only = {
        rp: held
        for rp, held in before.items()
        if "NET_BW_EGR_KILOBIT_PER_SEC" not in held["resources"]
    }
    body = {
        "allocations": {rp: {"resources": held["resources"]} for rp, held in flavor_only.items()},
        "project_id": consumer["project_id"],
        "user_id": consumer["user_id"],
        "consumer_generation": consumer["consumer_generation"],
        "consumer_type": "INSTANCE",
    }
    w.ok(client.put(f"/placement/allocations/{server_id}", json=body, headers=w.PLACEMENT))

    healed = _heal(stack)
    assert (healed.allocations_created, healed.port_allocations_added) == (0, 1)
    assert _resources(client, server_id) == _resources(client, server_id, before)
    assert _port(client, port["id"])["binding:profile"] == port["binding:profile"]
    _assert_clean(stack)


def test_a_profile_naming_another_provider_is_fixed(start_stack: StackFactory) -> None:
    # Two physical functions on one physnet: either can serve the port, the profile names the
    # one that does not hold its bandwidth.
    pfs = {
        pf: {"physnet": "physnet1", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000}
        for pf in ("ens1f0", "ens1f1")
    }
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "sr", "count": 1, **host}]})
    flavor, image = w.flavor_and_image(stack)
    body = {
        "network_id": w.network(client, "physnet1", "10.1.0.0/24"),
        "qos_policy_id": w.bandwidth_policy(client, 3000),
        "binding:vnic_type": "direct",
    }
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    server = w.wait(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    assert server["status"] == "ACTIVE", server.get("fault")
    profile = _port(client, port["id"])["binding:profile"]
    ((group, held),) = profile["allocation"].items()
    name = w.provider_name(client, held)
    other = (
        name.replace("ens1f0", "ens1f1")
        if name.endswith("ens1f0")
        else name.replace("ens1f1", "ens1f0")
    )
    (provider,) = w.ok(client.get("/placement/resource_providers", params={"name": other}))[
        "resource_providers"
    ]
    wrong = {**profile, "allocation": {group: provider["uuid"]}}
    w.ok(
        client.put(
            f"/networking/v2.0/ports/{port['id']}", json={"port": {"binding:profile": wrong}}
        )
    )
    assert _port(client, port["id"])["binding:profile"]["allocation"] == wrong["allocation"]

    healed = _heal(stack)
    assert (healed.profiles_fixed, healed.port_allocations_added, healed.failures) == (1, 0, [])
    assert _port(client, port["id"])["binding:profile"]["allocation"] == profile["allocation"]
    _assert_clean(stack)

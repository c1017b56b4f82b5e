"""What operators and other services ask of servers, through a running stack: deferred delete
(soft delete, restore, forceDelete, reclaim), server diagnostics, external events and the
hosts' usage audits, with the codes and fields Nova's API has (what tempest reads)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import httpx

from berth.compute.db import instances
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
SERVERS = "/compute/v2.1/servers"
OWNER = {**w.COMPUTE, "x-auth-token": "demo:admin", "x-roles": "member,reader"}
NETWORK_SERVICE = {**w.COMPUTE, "x-auth-token": "neutron:service", "x-roles": "service"}


def _act(client: httpx.Client, server_id: str, body: Any) -> httpx.Response:
    return client.post(f"{SERVERS}/{server_id}/action", json=body, headers=OWNER)


def _until(client: httpx.Client, server_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        server = w.ok(client.get(f"{SERVERS}/{server_id}", headers=w.COMPUTE))["server"]
        if server["status"] == status and server["OS-EXT-STS:task_state"] is None:
            return server  # type: ignore[no-any-return]
        time.sleep(0.02)
    raise AssertionError(f"server {server_id} is {server['status']}, not {status}")


def _quota_instances(client: httpx.Client) -> int:
    detail = w.ok(client.get("/compute/v2.1/os-quota-sets/admin/detail", headers=w.COMPUTE))
    return int(detail["quota_set"]["instances"]["in_use"])


def test_a_deferred_delete_keeps_the_server_until_restored_or_reclaimed(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **HOST}]},
        reclaim_instance_interval=3600,
    )
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    held = w.allocations(client, server_id)
    assert _quota_instances(client) == 1
    # Restoring a server that is not soft-deleted is a 409.
    assert _act(client, server_id, {"restore": None}).status_code == 409

    assert client.delete(f"{SERVERS}/{server_id}", headers=OWNER).status_code == 204
    server = _until(client, server_id, "SOFT_DELETED")
    assert server["OS-EXT-STS:power_state"] == 4
    assert w.allocations(client, server_id) == held  # it keeps what it holds
    assert _quota_instances(client) == 0  # and counts for nothing
    assert _act(client, server_id, {"os-start": None}).status_code == 409

    assert _act(client, server_id, {"restore": None}).status_code == 202
    server = _until(client, server_id, "ACTIVE")
    assert server["OS-EXT-STS:power_state"] == 1
    assert _quota_instances(client) == 1
    events = w.ok(client.get(f"{SERVERS}/{server_id}/os-instance-actions", headers=w.COMPUTE))
    assert [a["action"] for a in events["instanceActions"]][:2] == ["restore", "delete"]

    # Soft-deleted once more, then reclaimed once its time has passed.
    assert client.delete(f"{SERVERS}/{server_id}", headers=OWNER).status_code == 204
    _until(client, server_id, "SOFT_DELETED")
    cell = stack.compute.cells.cells(include_cell0=False)[0]
    with stack.compute.cells.database(cell).write() as conn:
        long_ago = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(hours=2)
        instances.update(conn, server_id, {"soft_deleted_at": long_ago})
    w.wait_gone(client, server_id, timeout=20)
    assert w.allocations(client, server_id) == {}


def test_force_delete_deletes_at_once(start_stack: StackFactory) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **HOST}]},
        reclaim_instance_interval=3600,
    )
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    w.wait(client, server_id)
    assert client.delete(f"{SERVERS}/{server_id}", headers=OWNER).status_code == 204
    _until(client, server_id, "SOFT_DELETED")
    assert _act(client, server_id, {"forceDelete": None}).status_code == 202
    w.wait_gone(client, server_id)
    assert w.allocations(client, server_id) == {}
    missing = "5e2b9f5e-0000-4000-8000-00000000dead"
    for action in ("restore", "forceDelete"):
        assert _act(client, missing, {action: None}).status_code == 404


def test_diagnostics_external_events_and_usage_audits(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **HOST}]})
    flavor, image = w.flavor_and_image(stack, vcpus=2, ram=1024)
    net = w.network(client)
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server
    (port,) = w.ok(client.get(f"/networking/v2.0/ports?device_id={server_id}"))["ports"]

    path = f"{SERVERS}/{server_id}/diagnostics"
    latest = w.ok(client.get(path, headers=w.COMPUTE))
    assert (latest["state"], latest["driver"], latest["num_cpus"]) == ("running", "libvirt", 2)
    assert latest["memory_details"] == {"maximum": 1024, "used": 0}
    assert [nic["mac_address"] for nic in latest["nic_details"]] == [port["mac_address"]]
    assert latest["num_disks"] == 1 and latest["uptime"] >= 0
    legacy = w.ok(client.get(path, headers={"openstack-api-version": "compute 2.47"}))
    assert legacy["memory"] == 1024 * 1024 and f"tap{port['id'][:11]}_rx" in legacy
    assert client.get(path, headers=OWNER).status_code == 403
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    stopped = w.ok(client.get(path, headers=w.COMPUTE))
    assert (stopped["state"], stopped["uptime"]) == ("shutdown", None)

    # The network service changes the port's address, then tells compute.
    subnet = port["fixed_ips"][0]["subnet_id"]
    new_ips = [{"subnet_id": subnet, "ip_address": "192.0.2.200"}]
    w.ok(client.put(f"/networking/v2.0/ports/{port['id']}", json={"port": {"fixed_ips": new_ips}}))
    events = [
        {"name": "network-changed", "server_uuid": server_id, "tag": port["id"]},
        {"name": "network-vif-plugged", "server_uuid": "5e2b9f5e-0000-4000-8000-00000000dead"},
    ]
    body = {"events": events}
    answer = client.post(
        "/compute/v2.1/os-server-external-events", json=body, headers=NETWORK_SERVICE
    )
    assert answer.status_code == 207, answer.text
    assert [(e["code"], e["status"]) for e in answer.json()["events"]] == [
        (200, "completed"),
        (404, "failed"),
    ]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        addresses = w.ok(client.get(f"{SERVERS}/{server_id}/ips", headers=w.COMPUTE))
        if [a["addr"] for a in addresses["addresses"]["public"]] == ["192.0.2.200"]:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"addresses not refreshed: {addresses}")
    forbidden = client.post("/compute/v2.1/os-server-external-events", json=body, headers=OWNER)
    assert forbidden.status_code == 403
    none_found = {"events": events[1:]}
    answer = client.post(
        "/compute/v2.1/os-server-external-events", json=none_found, headers=NETWORK_SERVICE
    )
    assert answer.status_code == 404

    # The host audited last month's usage when the stack started.
    log = w.ok(client.get("/compute/v2.1/os-instance_usage_audit_log", headers=w.COMPUTE))
    shown = log["instance_usage_audit_logs"]
    assert (shown["num_hosts"], shown["num_hosts_done"]) == (1, 1)
    assert shown["overall_status"] == "ALL hosts done. 0 errors."
    assert server["OS-EXT-SRV-ATTR:host"] in shown["log"]


def test_os_networks_lists_the_networks_the_caller_may_use_before_2_36(
    start_stack: StackFactory,
) -> None:
    _, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **HOST}]})
    shared = w.network(client)
    private = w.ok(client.post("/networking/v2.0/networks", json={"network": {"name": "mine"}}))[
        "network"
    ]["id"]
    v2_35 = {"openstack-api-version": "compute 2.35"}
    admin = w.ok(client.get("/compute/v2.1/os-networks", headers=v2_35))["networks"]
    assert {n["label"] for n in admin} == {"public", "mine"}
    assert "vlan" in admin[0] and admin[0]["cidr"] is None
    stranger = {**v2_35, "x-auth-token": "eve:elsewhere", "x-roles": "member,reader"}
    theirs = w.ok(client.get("/compute/v2.1/os-networks", headers=stranger))["networks"]
    assert [(n["id"], n["label"]) for n in theirs] == [(shared, "public")]
    assert "vlan" not in theirs[0]
    one = w.ok(client.get(f"/compute/v2.1/os-networks/{shared}", headers=stranger))["network"]
    assert one["label"] == "public"
    assert client.get(f"/compute/v2.1/os-networks/{private}", headers=stranger).status_code == 404
    assert client.get("/compute/v2.1/os-networks", headers=w.COMPUTE).status_code == 404

"""Shelve, offload and unshelve a server with a QoS port: what it holds at every step."""

from __future__ import annotations

import time
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.host.driver import FailurePlan
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip


def _booted(
    start_stack: StackFactory, hosts: int = 2, **compute: Any
) -> tuple[Stack, httpx.Client, str, str]:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": hosts, **OVS_HOST}]}, **compute
    )
    flavor, image = w.flavor_and_image(stack)
    body = {
        "port": {"network_id": w.network(client), "qos_policy_id": w.bandwidth_policy(client, 4000)}
    }
    port = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return stack, client, server_id, port["id"]


def _act(client: httpx.Client, server_id: str, action: str) -> None:
    answer = client.post(
        f"/compute/v2.1/servers/{server_id}/action", json={action: None}, headers=w.COMPUTE
    )
    assert answer.status_code == 202, answer.text


def _until(
    client: httpx.Client, server_id: str, status: str, timeout: float = 30.0
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]
        if server["status"] == status and server["OS-EXT-STS:task_state"] is None:
            return server  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} is {server['status']}, not {status}")


def _port(client: httpx.Client, port_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]  # type: ignore[no-any-return]


def _used(client: httpx.Client) -> dict[str, dict[str, int]]:
    """Every provider's non-zero usages, by name."""
    providers = w.ok(client.get("/placement/resource_providers", headers=w.PLACEMENT))
    found = {}
    for rp in providers["resource_providers"]:
        usages = w.ok(
            client.get(f"/placement/resource_providers/{rp['uuid']}/usages", headers=w.PLACEMENT)
        )["usages"]
        if any(usages.values()):
            found[rp["name"]] = {rc: n for rc, n in usages.items() if n}
    return found


def _holds_nothing(stack: Stack, client: httpx.Client, server_id: str, port_id: str) -> None:
    server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]
    assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("SHELVED_OFFLOADED", None)
    assert server["OS-EXT-SRV-ATTR:hypervisor_hostname"] is None
    assert w.allocations(client, server_id) == {}
    assert _used(client) == {}
    port = _port(client, port_id)
    assert (port["device_id"], port["binding:host_id"], port["binding:profile"]) == (
        server_id, "", {}
    )  # fmt: skip
    assert not any(server_id in agent.driver.running for agent in stack.agents.values())
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()


def _runs_with_its_port(client: httpx.Client, server_id: str, port_id: str) -> str:
    """The host the ACTIVE server runs on, holding its flavor and its port's bandwidth there."""
    server = _until(client, server_id, "ACTIVE")
    host = server["OS-EXT-SRV-ATTR:host"]
    held = w.allocations(client, server_id)
    names = {w.provider_name(client, rp): rp for rp in held}
    bridge = f"{host}:Open vSwitch agent:br-ex"
    assert set(names) == {host, bridge}, names
    assert held[names[bridge]]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 4000}
    port = _port(client, port_id)
    (group,) = port["resource_request"]["request_groups"]
    assert port["binding:host_id"] == host
    assert port["binding:profile"]["allocation"] == {group["id"]: names[bridge]}
    return str(host)


def _actions(client: httpx.Client, server_id: str) -> dict[str, dict[str, Any]]:
    """Action name -> the newest such action with its events (as an admin sees them)."""
    path = f"/compute/v2.1/servers/{server_id}/os-instance-actions"
    headers = {"openstack-api-version": "compute 2.62"}
    found = {}
    for action in reversed(w.ok(client.get(path, headers=headers))["instanceActions"]):
        shown = w.ok(client.get(f"{path}/{action['request_id']}", headers=headers))
        found[action["action"]] = shown["instanceAction"]
    return found


def _events(client: httpx.Client, server_id: str) -> dict[str, list[tuple[str, str]]]:
    """Action name -> its events (name, result)."""
    return {
        name: sorted((e["event"], e["result"]) for e in action["events"])
        for name, action in _actions(client, server_id).items()
    }


def test_shelve_offloads_at_once_and_unshelve_places_the_server_again(
    start_stack: StackFactory,
) -> None:
    stack, client, server_id, port_id = _booted(start_stack)
    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    _holds_nothing(stack, client, server_id, port_id)

    _act(client, server_id, "unshelve")
    host = _runs_with_its_port(client, server_id, port_id)
    assert server_id in stack.agents[host].driver.running
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()
    events = _events(client, server_id)
    assert events["shelve"] == [
        ("compute_shelve_instance", "Success"), ("compute_shelve_offload_instance", "Success")
    ]  # fmt: skip
    assert events["unshelve"] == [
        ("compute_unshelve_instance", "Success"), ("conductor_unshelve_instance", "Success")
    ]  # fmt: skip

    # Deleting it gives back everything (the user's port stays, unbound and free).
    w.ok(client.delete(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))
    w.wait_gone(client, server_id)
    assert _used(client) == {}
    assert _port(client, port_id)["device_id"] == ""


def test_shelved_keeps_its_host_until_offloaded(start_stack: StackFactory) -> None:
    stack, client, server_id, port_id = _booted(start_stack, shelved_offload_time=-1)
    before = w.allocations(client, server_id)
    _act(client, server_id, "shelve")
    server = _until(client, server_id, "SHELVED")
    host = server["OS-EXT-SRV-ATTR:host"]
    assert server_id in stack.agents[host].driver.stopped
    assert set(w.allocations(client, server_id)) == set(before)
    assert _port(client, port_id)["binding:host_id"] == host

    # Unshelving a SHELVED server powers it on where it is.
    _act(client, server_id, "unshelve")
    assert _runs_with_its_port(client, server_id, port_id) == host
    assert server_id in stack.agents[host].driver.running

    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED")
    _act(client, server_id, "shelveOffload")
    _until(client, server_id, "SHELVED_OFFLOADED")
    _holds_nothing(stack, client, server_id, port_id)
    assert _events(client, server_id)["shelveOffload"] == [
        ("compute_shelve_offload_instance", "Success")
    ]

    # An offloaded server is deleted without a host.
    w.ok(client.delete(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))
    w.wait_gone(client, server_id)
    assert _port(client, port_id)["device_id"] == ""


def test_an_unshelve_that_fails_everywhere_is_offloaded_again_holding_nothing(
    start_stack: StackFactory,
) -> None:
    stack, client, server_id, port_id = _booted(start_stack, hosts=3)
    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    for agent in stack.agents.values():
        agent.driver.failures = FailurePlan(always=True)

    _act(client, server_id, "unshelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    _holds_nothing(stack, client, server_id, port_id)
    unshelve = _actions(client, server_id)["unshelve"]
    assert unshelve["message"] == "Error"
    events = {(e["event"], e["host"]): e for e in unshelve["events"]}
    for host in ("cn1", "cn2", "cn3"):
        assert events["compute_unshelve_instance", host]["result"] == "Error"
    conductor = events["conductor_unshelve_instance", ""]
    assert conductor["result"] == "Error"
    assert "Unshelve failed on every host tried (3)" in conductor["traceback"]

    # One host recovers: the next unshelve lands there.
    stack.agents["cn2"].driver.failures = FailurePlan()
    _act(client, server_id, "unshelve")
    assert _runs_with_its_port(client, server_id, port_id) == "cn2"


def test_an_unshelve_with_a_failing_host_moves_to_an_alternate(start_stack: StackFactory) -> None:
    stack, client, server_id, port_id = _booted(start_stack, hosts=2)
    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    stack.agents["cn1"].driver.failures = FailurePlan(always=True)
    _act(client, server_id, "unshelve")
    assert _runs_with_its_port(client, server_id, port_id) == "cn2"
    assert _used(client).keys() == {"cn2", "cn2:Open vSwitch agent:br-ex"}


def test_an_sriov_server_gives_back_its_virtual_function(start_stack: StackFactory) -> None:
    pfs = {"ens1f0": {"physnet": "physnet1", "vfs": 1, "egress_kbps": 10000, "ingress_kbps": 10000}}
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "sr", "count": 1, **host}]})
    flavor, image = w.flavor_and_image(stack)
    body = {
        "network_id": w.network(client, "physnet1", "10.1.0.0/24"),
        "qos_policy_id": w.bandwidth_policy(client, 3000),
        "binding:vnic_type": "direct",
    }
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    _holds_nothing(stack, client, server_id, port["id"])
    # The one virtual function is free again: a second server can take it.
    other = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    second = w.wait(client, w.boot(client, flavor, image, [{"port": other["id"]}], name="vm2"))
    assert second["status"] == "ACTIVE", second.get("fault")
    # Now the shelved one has nowhere to go (no free virtual function): offloaded again.
    _act(client, server_id, "unshelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    assert _actions(client, server_id)["unshelve"]["message"] == "Error"
    assert w.allocations(client, server_id) == {}
    w.ok(client.delete(f"/compute/v2.1/servers/{second['id']}", headers=w.COMPUTE))
    w.wait_gone(client, second["id"])
    _act(client, server_id, "unshelve")
    assert _until(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == "sr1"
    profile = _port(client, port["id"])["binding:profile"]
    assert w.provider_name(client, next(iter(profile["allocation"].values()))).endswith("ens1f0")


def test_unshelve_asks_for_the_ports_requests_of_now(start_stack: StackFactory) -> None:
    _, client, server_id, port_id = _booted(start_stack)
    _act(client, server_id, "shelve")
    _until(client, server_id, "SHELVED_OFFLOADED")
    bigger = w.bandwidth_policy(client, 6000)
    w.ok(client.put(f"/networking/v2.0/ports/{port_id}", json={"port": {"qos_policy_id": bigger}}))
    _act(client, server_id, "unshelve")
    server = _until(client, server_id, "ACTIVE")
    held = w.allocations(client, server_id)
    bridge = f"{server['OS-EXT-SRV-ATTR:host']}:Open vSwitch agent:br-ex"
    (on_bridge,) = (a for rp, a in held.items() if w.provider_name(client, rp) == bridge)
    assert on_bridge["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 6000}

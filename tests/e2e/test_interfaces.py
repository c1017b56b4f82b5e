"""Interface attach and detach on a running server (os-interface), on the all-in-one stack: the
server's allocation grows by exactly the port's request groups under its host and shrinks back,
the port is bound with the providers in its profile, and a refusal leaves nothing behind."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.db import pci_devices
from berth.compute.heal import heal
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
BW = "NET_BW_EGR_KILOBIT_PER_SEC"


def _server(
    start_stack: StackFactory, host: dict[str, Any] = OVS_HOST
) -> tuple[Stack, httpx.Client, str]:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **host}]})
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return stack, client, server_id


def _interfaces(client: httpx.Client, server_id: str) -> str:
    return f"/compute/v2.1/servers/{server_id}/os-interface"


def _port(client: httpx.Client, port_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]  # type: ignore[no-any-return]


def _qos_port(client: httpx.Client, network_id: str, kbps: int, **extra: Any) -> dict[str, Any]:
    body = {"network_id": network_id, "qos_policy_id": w.bandwidth_policy(client, kbps), **extra}
    return w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]  # type: ignore[no-any-return]


def _resources(client: httpx.Client, server_id: str) -> dict[str, dict[str, int]]:
    return {rp: a["resources"] for rp, a in w.allocations(client, server_id).items()}


def _attach(client: httpx.Client, server_id: str, attachment: dict[str, Any]) -> httpx.Response:
    return client.post(
        _interfaces(client, server_id), json={"interfaceAttachment": attachment}, headers=w.COMPUTE
    )


def _assert_clean(stack: Stack) -> None:
    healed = heal(stack.compute.cells, stack.placement_client, stack.network_client, dry_run=True)
    assert (healed.actions, healed.failures) == ([], []), healed.actions
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()


def _events(client: httpx.Client, server_id: str, action: str) -> list[tuple[str, str]]:
    actions = w.ok(
        client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions", headers=w.COMPUTE)
    )["instanceActions"]
    (found,) = [a for a in actions if a["action"] == action][:1]
    shown = w.ok(
        client.get(
            f"/compute/v2.1/servers/{server_id}/os-instance-actions/{found['request_id']}",
            headers=w.COMPUTE,
        )
    )["instanceAction"]
    return [(e["event"], e["result"]) for e in shown["events"]]


def test_a_qos_port_attached_then_detached(start_stack: StackFactory) -> None:
    stack, client, server_id = _server(start_stack)
    before = _resources(client, server_id)
    port = _qos_port(client, w.network(client), 3000)
    (group,) = port["resource_request"]["request_groups"]

    attached = w.ok(_attach(client, server_id, {"port_id": port["id"]}))["interfaceAttachment"]
    assert (attached["port_id"], attached["net_id"]) == (port["id"], port["network_id"])
    assert attached["mac_addr"] == port["mac_address"]

    after = _resources(client, server_id)
    (bridge,) = set(after) - set(before)
    assert w.provider_name(client, bridge) == "cn1:Open vSwitch agent:br-ex"
    assert after == {**before, bridge: group["resources"]}
    bound = _port(client, port["id"])
    assert bound["binding:host_id"] == "cn1"
    assert bound["binding:profile"]["allocation"] == {group["id"]: bridge}
    assert (bound["device_id"], bound["device_owner"]) == (server_id, "compute:nova")
    listed = w.ok(client.get(_interfaces(client, server_id), headers=w.COMPUTE))
    assert [i["port_id"] for i in listed["interfaceAttachments"]] == [port["id"]]
    shown = w.ok(client.get(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE))
    assert shown["interfaceAttachment"] == listed["interfaceAttachments"][0]
    server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]
    assert server["status"] == "ACTIVE" and server["OS-EXT-STS:task_state"] is None
    assert list(server["addresses"]) == ["public"]
    assert _events(client, server_id, "attach_interface") == [
        ("compute_attach_interface", "Success")
    ]
    _assert_clean(stack)

    gone = client.delete(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE)
    assert gone.status_code == 202, gone.text
    assert _resources(client, server_id) == before
    left = _port(client, port["id"])
    assert (left["binding:host_id"], left["binding:profile"], left["device_id"]) == ("", {}, "")
    listed = w.ok(client.get(_interfaces(client, server_id), headers=w.COMPUTE))
    assert listed["interfaceAttachments"] == []
    assert _events(client, server_id, "detach_interface") == [
        ("compute_detach_interface", "Success")
    ]
    _assert_clean(stack)
    again = client.delete(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE)
    assert again.status_code == 404


def test_a_port_asking_more_than_the_host_has_is_refused(start_stack: StackFactory) -> None:
    stack, client, server_id = _server(start_stack)
    before = _resources(client, server_id)
    network = w.network(client)
    port = _qos_port(client, network, 20000)  # the bridge has 10000

    refused = _attach(client, server_id, {"port_id": port["id"]})
    assert refused.status_code == 400, refused.text
    assert "badRequest" in refused.json()
    assert _resources(client, server_id) == before
    left = _port(client, port["id"])
    assert (left["device_id"], left["binding:host_id"]) == ("", "")
    server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]
    assert (server["status"], server["OS-EXT-STS:task_state"]) == ("ACTIVE", None)
    assert _events(client, server_id, "attach_interface") == [("compute_attach_interface", "Error")]

    # A network whose policy asks too much: the port made for the attach is deleted again.
    policy = w.bandwidth_policy(client, 20000)
    body = {"network": {"qos_policy_id": policy}}
    w.ok(client.put(f"/networking/v2.0/networks/{network}", json=body))
    refused = _attach(client, server_id, {"net_id": network})
    assert refused.status_code == 400, refused.text
    ports = w.ok(client.get("/networking/v2.0/ports", params={"network_id": network}))["ports"]
    assert [p["id"] for p in ports] == [port["id"]]
    assert _resources(client, server_id) == before
    _assert_clean(stack)


def test_attach_by_network_with_a_minimum_bandwidth_policy(start_stack: StackFactory) -> None:
    stack, client, server_id = _server(start_stack)
    before = _resources(client, server_id)
    policy = w.bandwidth_policy(client, 2500)
    net = w.network(client)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )

    answer = _attach(
        client, server_id, {"net_id": net, "fixed_ips": [{"ip_address": "192.0.2.77"}]}
    )
    attached = w.ok(answer)["interfaceAttachment"]
    assert attached["fixed_ips"][0]["ip_address"] == "192.0.2.77"
    port = _port(client, attached["port_id"])
    (group,) = port["resource_request"]["request_groups"]
    ((gid, bridge),) = port["binding:profile"]["allocation"].items()
    assert gid == group["id"]
    assert _resources(client, server_id) == {**before, bridge: {BW: 2500}}
    _assert_clean(stack)

    # The address is taken now: a second attach asking for it is a conflict.
    taken = _attach(client, server_id, {"net_id": net, "fixed_ips": [{"ip_address": "192.0.2.77"}]})
    assert taken.status_code == 409, taken.text

    gone = client.delete(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE)
    assert gone.status_code == 202, gone.text
    # The port compute made is deleted with the detach.
    assert client.get(f"/networking/v2.0/ports/{port['id']}").status_code == 404
    assert _resources(client, server_id) == before
    _assert_clean(stack)


def test_a_port_in_use_and_unknown_ones(start_stack: StackFactory) -> None:
    stack, client, server_id = _server(start_stack)
    network = w.network(client)
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": {"network_id": network}}))
    port_id = port["port"]["id"]
    w.ok(_attach(client, server_id, {"port_id": port_id}))
    assert _attach(client, server_id, {"port_id": port_id}).status_code == 409
    unknown = "00000000-0000-4000-8000-000000000000"
    assert _attach(client, server_id, {"port_id": unknown}).status_code == 404
    assert _attach(client, server_id, {"net_id": unknown}).status_code == 404
    other = client.delete(f"{_interfaces(client, server_id)}/{unknown}", headers=w.COMPUTE)
    assert other.status_code == 404
    assert (
        client.get(f"{_interfaces(client, server_id)}/{unknown}", headers=w.COMPUTE).status_code
        == 404
    )
    _assert_clean(stack)
    # Deleting the server gives back the attached port (the user's: unbound, kept).
    w.ok(client.delete(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))
    w.wait_gone(client, server_id)
    left = _port(client, port_id)
    assert (left["device_id"], left["binding:host_id"]) == ("", "")


def test_an_sriov_port_takes_and_gives_back_a_virtual_function(
    start_stack: StackFactory,
) -> None:
    pfs = {"ens1f0": {"physnet": "physnet1", "vfs": 1, "egress_kbps": 10000, "ingress_kbps": 10000}}
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    stack, client, server_id = _server(start_stack, host)
    before = _resources(client, server_id)
    network = w.network(client, "physnet1", "10.1.0.0/24")
    port = _qos_port(client, network, 3000, **{"binding:vnic_type": "direct"})

    w.ok(_attach(client, server_id, {"port_id": port["id"]}))
    bound = _port(client, port["id"])
    ((_gid, pf_rp),) = bound["binding:profile"]["allocation"].items()
    assert w.provider_name(client, pf_rp) == "cn1:NIC Switch agent:ens1f0"
    assert _resources(client, server_id) == {**before, pf_rp: {BW: 3000}}
    assert _held_vfs(stack, server_id) == 1
    _assert_clean(stack)

    # The one VF is taken: a second SR-IOV port is refused, and leaves nothing.
    second = _qos_port(client, network, 1000, **{"binding:vnic_type": "direct"})
    refused = _attach(client, server_id, {"port_id": second["id"]})
    assert refused.status_code == 400, refused.text
    assert "virtual function" in refused.text
    assert _resources(client, server_id) == {**before, pf_rp: {BW: 3000}}
    assert _port(client, second["id"])["device_id"] == ""

    gone = client.delete(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE)
    assert gone.status_code == 202, gone.text
    assert _resources(client, server_id) == before
    assert _held_vfs(stack, server_id) == 0
    w.ok(_attach(client, server_id, {"port_id": second["id"]}))
    assert _held_vfs(stack, server_id) == 1
    _assert_clean(stack)


def _held_vfs(stack: Stack, server_id: str) -> int:
    (cell,) = stack.compute.cells.cells(include_cell0=False)
    with stack.compute.cells.database(cell).read() as conn:
        return len(pci_devices.held_by(conn, server_id))


def test_two_attaches_racing_for_the_last_bandwidth(start_stack: StackFactory) -> None:
    stack, client, first = _server(start_stack)
    flavor, image = w.flavor_and_image(stack, vcpus=1)
    second = w.boot(client, flavor, image, "none", name="vm2")
    assert w.wait(client, second)["status"] == "ACTIVE"
    network = w.network(client)
    ports = [_qos_port(client, network, 6000) for _ in range(2)]  # the bridge has 10000

    def attach(pair: tuple[str, dict[str, Any]]) -> int:
        return _attach(client, pair[0], {"port_id": pair[1]["id"]}).status_code

    with ThreadPoolExecutor(2) as pool:
        answers = sorted(pool.map(attach, zip((first, second), ports, strict=True)))
    assert answers == [200, 400]
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()
    held = [_resources(client, s) for s in (first, second)]
    assert sum(r.get(BW, 0) for h in held for r in h.values()) == 6000
    _assert_clean(stack)


def test_an_attached_port_moves_with_its_server(start_stack: StackFactory) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    port = _qos_port(client, w.network(client), 3000)
    w.ok(_attach(client, server_id, {"port_id": port["id"]}))

    action = f"/compute/v2.1/servers/{server_id}/action"
    moved = client.post(action, json={"migrate": None}, headers=w.COMPUTE)
    assert moved.status_code == 202, moved.text
    deadline = time.monotonic() + 30
    while (server := _show(client, server_id))["status"] != "VERIFY_RESIZE" or server[
        "OS-EXT-STS:task_state"
    ]:
        assert time.monotonic() < deadline, server["status"]
        time.sleep(0.05)
    dest = server["OS-EXT-SRV-ATTR:host"]
    names = {w.provider_name(client, rp): r for rp, r in _resources(client, server_id).items()}
    assert names[f"{dest}:Open vSwitch agent:br-ex"] == {BW: 3000}
    assert _port(client, port["id"])["binding:host_id"] == dest
    confirmed = client.post(action, json={"confirmResize": None}, headers=w.COMPUTE)
    assert confirmed.status_code == 204, confirmed.text
    while _show(client, server_id)["status"] != "ACTIVE":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    _assert_clean(stack)

    gone = client.delete(f"{_interfaces(client, server_id)}/{port['id']}", headers=w.COMPUTE)
    assert gone.status_code == 202, gone.text
    assert all(BW not in r for r in _resources(client, server_id).values())
    _assert_clean(stack)


def _show(client: httpx.Client, server_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]  # type: ignore[no-any-return]

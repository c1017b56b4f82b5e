"""Server actions (power changes, rebuild, lock, reset state), server update and the create
checks, through the Compute API of a running stack, with the states, codes and fields Nova's
API has (what tempest's server tests read)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.db import images
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
SERVERS = "/compute/v2.1/servers"
# The server's owner without the admin role (servers are booted by "admin" in project "admin").
OWNER = {**w.COMPUTE, "x-auth-token": "demo:admin", "x-roles": "member,reader"}
STRANGER = {**w.COMPUTE, "x-auth-token": "eve:elsewhere", "x-roles": "member,reader"}


def _stack(start_stack: StackFactory) -> tuple[Stack, httpx.Client, str, str]:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    return stack, client, flavor, image


def _another_image(stack: Stack) -> str:
    image_id = str(uuid.uuid4())
    with stack.api_db.write() as conn:
        images.create(conn, image_id, {"name": "another"})
    return image_id


def _booted(client: httpx.Client, flavor: str, image: str, **extra: Any) -> str:
    server_id = w.boot(client, flavor, image, "none", **extra)
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    return server_id


def _act(
    client: httpx.Client, server_id: str, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    return client.post(f"{SERVERS}/{server_id}/action", json=body, headers=headers or w.COMPUTE)


def _until(client: httpx.Client, server_id: str, status: str) -> dict[str, Any]:
    """The server once it shows ``status`` with no task (what tempest's waiter waits for)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        server = _show(client, server_id)
        if server["status"] == status and server["OS-EXT-STS:task_state"] is None:
            return server
        time.sleep(0.02)
    raise AssertionError(f"server {server_id} is {server['status']}, not {status}")


def _show(
    client: httpx.Client, server_id: str, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    answer = client.get(f"{SERVERS}/{server_id}", headers=headers or w.COMPUTE)
    return w.ok(answer)["server"]  # type: ignore[no-any-return]


def _refused(answer: httpx.Response, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    ((_, error),) = answer.json().items()
    assert words in error["message"], error


def _actions(client: httpx.Client, server_id: str) -> list[str]:
    found = w.ok(client.get(f"{SERVERS}/{server_id}/os-instance-actions", headers=w.COMPUTE))
    return [action["action"] for action in reversed(found["instanceActions"])]


def test_power_changes_walk_nova_s_states(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    driver = stack.agents["cn1"].driver
    walk = [
        ({"os-stop": None}, "SHUTOFF", 4, driver.stopped),
        ({"os-start": {}}, "ACTIVE", 1, driver.running),
        ({"pause": None}, "PAUSED", 3, driver.paused),
        ({"unpause": {}}, "ACTIVE", 1, driver.running),
        ({"suspend": None}, "SUSPENDED", 7, driver.suspended),
        ({"resume": None}, "ACTIVE", 1, driver.running),
        ({"reboot": {"type": "SOFT"}}, "ACTIVE", 1, driver.running),
        ({"reboot": {"type": "hard"}}, "ACTIVE", 1, driver.running),
    ]
    for body, status, power_state, held in walk:
        answer = _act(client, server_id, body)
        assert answer.status_code == 202, answer.text
        server = _until(client, server_id, status)
        assert server["OS-EXT-STS:power_state"] == power_state, body
        assert server_id in held, body
    assert _actions(client, server_id) == [
        "create", "stop", "start", "pause", "unpause", "suspend", "resume", "reboot", "reboot",
    ]  # fmt: skip
    events = w.ok(client.get(
        f"{SERVERS}/{server_id}/os-instance-actions/{_last_request(client, server_id)}",
        headers=w.COMPUTE,
    ))["instanceAction"]["events"]  # fmt: skip
    assert [(e["event"], e["result"]) for e in events] == [("compute_reboot_instance", "Success")]
    # A message delivered again (or late) finds no task of its kind and does nothing.
    agent = stack.agents["cn1"]
    agent.change_power(server_id, "stop")
    agent.rebuild_instance(server_id)
    server = _show(client, server_id)
    assert (server["status"], server["OS-EXT-STS:power_state"]) == ("ACTIVE", 1)
    assert server_id in driver.running and len(_actions(client, server_id)) == 9


def _last_request(client: httpx.Client, server_id: str) -> str:
    found = w.ok(client.get(f"{SERVERS}/{server_id}/os-instance-actions", headers=w.COMPUTE))
    return str(found["instanceActions"][0]["request_id"])


def test_a_change_the_state_does_not_allow_is_a_409(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    for action in ("os-start", "unpause", "resume"):
        _refused(
            _act(client, server_id, {action: None}), 409,
            "while it is in vm_state active",
        )  # fmt: skip
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    _refused(
        _act(client, server_id, {"os-stop": None}),
        409,
        f"Cannot 'stop' instance {server_id} while it is in vm_state stopped",
    )
    for action in ("pause", "suspend"):
        _refused(_act(client, server_id, {action: None}), 409, "in vm_state stopped")
    _refused(_act(client, server_id, {"reboot": {"type": "SOFT"}}), 409, "vm_state stopped")
    # A hard reboot brings a stopped server back, as Nova's.
    assert _act(client, server_id, {"reboot": {"type": "HARD"}}).status_code == 202
    _until(client, server_id, "ACTIVE")


def test_bad_arguments_and_unknown_servers(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    _refused(_act(client, server_id, {"reboot": {"type": "WARM"}}), 400, "attribute reboot/type.")
    _refused(_act(client, server_id, {"reboot": {}}), 400, "reboot")
    _refused(_act(client, server_id, {"reboot": "HARD"}), 400, "reboot")
    _refused(_act(client, server_id, {"pause": {"now": True}}), 400, "attribute pause.")
    nowhere = str(uuid.uuid4())
    for body in (
        {"reboot": {"type": "SOFT"}}, {"os-stop": None}, {"pause": None}, {"suspend": None},
        {"rebuild": {"imageRef": image}}, {"lock": None}, {"os-resetState": {"state": "error"}},
    ):  # fmt: skip
        _refused(_act(client, nowhere, body), 404, "could not be found")
    _refused(_act(client, "999", {"os-resetState": {"state": "error"}}), 404, "not be found")


def _port_view(client: httpx.Client, port_id: str) -> dict[str, Any]:
    port = w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]
    keys = ("binding:host_id", "binding:profile", "binding:vif_type", "device_id", "fixed_ips")
    return {key: port[key] for key in keys}


def test_rebuild_keeps_ports_bindings_and_allocations(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    other_image = _another_image(stack)
    body = {
        "port": {"network_id": w.network(client), "qos_policy_id": w.bandwidth_policy(client, 4000)}
    }
    port_id = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]["id"]
    server_id = w.boot(client, flavor, image, [{"port": port_id}], metadata={"old": "1"})
    before = w.wait(client, server_id)
    allocations, port = w.allocations(client, server_id), _port_view(client, port_id)
    assert len(allocations) == 2  # the compute node and the bandwidth provider

    rebuild = {
        "imageRef": other_image, "name": "renewed", "metadata": {"rebuild": "server"},
        "adminPass": "rebuildPassw0rd", "description": "second life",
    }  # fmt: skip
    answer = _act(client, server_id, {"rebuild": rebuild})
    assert answer.status_code == 202, answer.text
    view = answer.json()["server"]
    assert view["id"] == server_id and view["image"]["id"] == other_image
    assert (view["adminPass"], view["name"], view["status"]) == (
        "rebuildPassw0rd", "renewed", "REBUILD",
    )  # fmt: skip
    assert view["key_name"] is None and view["user_data"] is None  # 2.54, 2.57
    assert view["locked"] is False and view["trusted_image_certificates"] is None
    assert not [key for key in view if key.startswith("OS-EXT") or key == "security_groups"]
    # Addresses as upstream's update view has them: no type, no MAC.
    assert view["addresses"] == {
        network: [{"addr": a["addr"], "version": a["version"]} for a in entries]
        for network, entries in before["addresses"].items()
    }
    assert view["addresses"]

    server = _until(client, server_id, "ACTIVE")
    assert server["image"]["id"] == other_image
    assert (server["name"], server["metadata"], server["description"]) == (
        "renewed", {"rebuild": "server"}, "second life",
    )  # fmt: skip
    assert server["addresses"] == before["addresses"]
    assert w.allocations(client, server_id) == allocations
    assert _port_view(client, port_id) == port
    assert server_id in stack.agents["cn1"].driver.running
    assert _actions(client, server_id)[-1] == "rebuild"

    # A stopped server is rebuilt and stays stopped.
    assert _act(client, server_id, {"os-stop": {}}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    assert _act(client, server_id, {"rebuild": {"imageRef": image}}).status_code == 202
    assert _until(client, server_id, "SHUTOFF")["image"]["id"] == image
    assert w.allocations(client, server_id) == allocations


def test_rebuild_refuses_what_a_create_refuses(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    unknown = str(uuid.uuid4())
    _refused(_act(client, server_id, {"rebuild": {"imageRef": unknown}}), 400, "imageRef")
    _refused(_act(client, server_id, {"rebuild": {}}), 400, "imageRef")
    bad_ip = {"imageRef": image, "accessIPv4": "1.1.1.1.1.1"}
    _refused(_act(client, server_id, {"rebuild": bad_ip}), 400, "accessIPv4")
    too_old = {**w.COMPUTE, "openstack-api-version": "compute 2.18"}
    described = {"imageRef": image, "description": "x"}
    _refused(_act(client, server_id, {"rebuild": described}, too_old), 400, "description")
    keyed = {"imageRef": image, "key_name": "nokey"}
    _refused(_act(client, server_id, {"rebuild": keyed}), 400, "key_name")
    assert _show(client, server_id)["status"] == "ACTIVE"  # nothing started


def test_an_admin_rebuilds_a_server_in_error(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    other_image = _another_image(stack)
    server_id = _booted(client, flavor, image)
    assert _act(client, server_id, {"os-resetState": {"state": "error"}}).status_code == 202
    assert _show(client, server_id)["status"] == "ERROR"
    answer = _act(client, server_id, {"rebuild": {"imageRef": other_image}}, OWNER)
    assert answer.status_code == 202, answer.text
    assert _until(client, server_id, "ACTIVE")["image"]["id"] == other_image


def test_reset_state(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    for state, status in (("error", "ERROR"), ("active", "ACTIVE")):
        assert _act(client, server_id, {"os-resetState": {"state": state}}).status_code == 202
        server = _show(client, server_id)
        assert (server["status"], server["OS-EXT-STS:task_state"]) == (status, None)
    _refused(_act(client, server_id, {"os-resetState": {"state": "invalid"}}), 400, "resetState")
    _refused(_act(client, server_id, {"os-resetState": {"state": 1}}), 400, "resetState")
    answer = _act(client, server_id, {"os-resetState": {"state": "error"}}, OWNER)
    _refused(answer, 403, "os_compute_api:os-admin-actions:reset_state")
    assert _actions(client, server_id) == ["create", "resetState", "resetState"]
    # A server in ERROR can be deleted by its owner.
    assert _act(client, server_id, {"os-resetState": {"state": "error"}}).status_code == 202
    assert client.delete(f"{SERVERS}/{server_id}", headers=OWNER).status_code == 204
    w.wait_gone(client, server_id)


def test_a_locked_server_refuses_its_owner_but_not_an_admin(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    assert "locked" not in _show(
        client, server_id, {**w.COMPUTE, "openstack-api-version": "compute 2.8"}
    )
    assert _act(client, server_id, {"lock": {}}, OWNER).status_code == 202
    assert _act(client, server_id, {"lock": None}, OWNER).status_code == 202  # again: no change
    assert _show(client, server_id, OWNER)["locked"] is True
    _refused(_act(client, server_id, {"os-stop": {}}, OWNER), 409, f"{server_id} is locked")
    _refused(client.delete(f"{SERVERS}/{server_id}", headers=OWNER), 409, "is locked")
    rebuild = {"rebuild": {"imageRef": image}}
    _refused(_act(client, server_id, rebuild, OWNER), 409, "is locked")
    metadata = {"metadata": {"k": "v"}}
    _refused(
        client.post(f"{SERVERS}/{server_id}/metadata", json=metadata, headers=OWNER), 409,
        "is locked",
    )  # fmt: skip
    # The owner may still rename it, as Nova's.
    renamed = client.put(f"{SERVERS}/{server_id}", json={"server": {"name": "x"}}, headers=OWNER)
    assert renamed.status_code == 200, renamed.text
    # An admin acts on a locked server.
    assert client.post(f"{SERVERS}/{server_id}/metadata", json=metadata).status_code == 200
    assert _act(client, server_id, {"os-stop": {}}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    assert _act(client, server_id, {"unlock": {}}, OWNER).status_code == 202
    assert _show(client, server_id)["locked"] is False
    assert _act(client, server_id, {"os-start": {}}, OWNER).status_code == 202
    _until(client, server_id, "ACTIVE")

    # A lock an admin of another project took needs unlock_override to be lifted by the owner.
    assert (
        _act(
            client, server_id, {"lock": None}, {**w.COMPUTE, "x-auth-token": "admin:ops"}
        ).status_code
        == 202
    )
    _refused(
        _act(client, server_id, {"unlock": None}, OWNER), 403,
        "os_compute_api:os-lock-server:unlock:unlock_override",
    )  # fmt: skip
    assert _act(client, server_id, {"unlock": None}).status_code == 202
    assert _actions(client, server_id) == [
        "create", "lock", "stop", "unlock", "start", "lock", "unlock",
    ]  # fmt: skip
    _refused(_act(client, server_id, {"lock": None}, STRANGER), 404, "could not be found")


def test_update_renames_describes_and_sets_access_addresses(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image, description="first")
    assert _show(client, server_id)["description"] == "first"

    def put(fields: dict[str, Any], headers: dict[str, str] | None = None) -> httpx.Response:
        return client.put(
            f"{SERVERS}/{server_id}", json={"server": fields}, headers=headers or w.COMPUTE
        )

    changes = {
        "name": "\u00cd\u00f1st\u00e1\u00f1c\u00e9", "description": "second",
        "accessIPv4": "1.1.1.1", "accessIPv6": "::babe:202:202",
    }  # fmt: skip
    answer = put(changes)
    assert answer.status_code == 200, answer.text
    view = answer.json()["server"]
    assert (view["name"], view["description"], view["accessIPv4"], view["accessIPv6"]) == (
        changes["name"], "second", "1.1.1.1", "::babe:202:202",
    )  # fmt: skip
    assert "key_name" not in view and not [k for k in view if k.startswith("OS-EXT")]
    shown = _show(client, server_id)
    assert (shown["name"], shown["accessIPv6"]) == (changes["name"], "::babe:202:202")
    assert w.ok(put({}))["server"]["name"] == changes["name"]  # nothing asked, nothing changed
    assert w.ok(put({"description": None}))["server"]["description"] is None

    _refused(put({"name": ""}), 400, "name")
    _refused(put({"name": "a" * 256}), 400, "name")
    _refused(put({"description": "d" * 256}), 400, "description")
    _refused(put({"accessIPv4": "::1"}), 400, "accessIPv4")
    _refused(put({"accessIPv6": "notvalid"}), 400, "accessIPv6")
    _refused(put({"flavor": "x"}), 400, "'flavor' was unexpected")
    too_old = {**w.COMPUTE, "openstack-api-version": "compute 2.18"}
    _refused(put({"description": "x"}, too_old), 400, "description")
    assert "description" not in w.ok(put({"name": "plain"}, too_old))["server"]
    _refused(put({"name": "x"}, STRANGER), 404, "could not be found")
    nowhere = client.put(
        f"{SERVERS}/{uuid.uuid4()}", json={"server": {"name": "x"}}, headers=w.COMPUTE
    )
    _refused(nowhere, 404, "could not be found")

    # A stopped server shows no progress, and may be renamed too.
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    assert "progress" not in _until(client, server_id, "SHUTOFF")
    assert w.ok(put({"name": "stopped"}))["server"]["status"] == "SHUTOFF"


def test_a_rename_while_the_server_is_scheduled_reaches_its_instance(
    start_stack: StackFactory,
) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = w.boot(client, flavor, image, "none", name="early")
    answer = client.put(
        f"{SERVERS}/{server_id}", json={"server": {"name": "renamed"}}, headers=w.COMPUTE
    )
    assert answer.status_code == 200, answer.text
    assert w.wait(client, server_id)["name"] == "renamed"


def _create(
    client: httpx.Client, server: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    return client.post(SERVERS, json={"server": server}, headers=headers or w.COMPUTE)


def test_create_checks_what_nova_checks(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    base = {"name": "vm", "flavorRef": flavor, "imageRef": image, "networks": "none"}
    refused = [
        ({"key_name": "missing"}, "key_name"),
        ({"accessIPv4": "1.1.1.1.1.1"}, "accessIPv4"),
        ({"accessIPv6": "notvalid"}, "accessIPv6"),
        ({"accessIPv4": "2001:db8::1"}, "accessIPv4"),
        ({"min_count": 0}, "min_count"),
        ({"min_count": "a"}, "min_count"),
        ({"max_count": 1.5}, "max_count"),
        ({"min_count": 3, "max_count": 2}, "min_count"),
        ({"flavorRef": -1}, "flavorRef"),
        ({"flavorRef": str(uuid.uuid4())}, "flavorRef"),
        ({"imageRef": -1}, "imageRef"),
        ({"imageRef": str(uuid.uuid4())}, "imageRef"),
        ({"name": ""}, "name"),
        ({"name": 12345}, "name"),
        ({"description": "d" * 256}, "description"),
        ({"security_groups": [{"name": "does_not_exist"}]}, "Security group does_not_exist"),
        ({"security_groups": "default"}, "security_groups"),
    ]
    for change, words in refused:
        _refused(_create(client, {**base, **change}), 400, words)
    too_old = {**w.COMPUTE, "openstack-api-version": "compute 2.18"}
    _refused(_create(client, {**base, "description": "x"}, too_old), 400, "description")

    made = _create(
        client,
        {**base, "accessIPv4": "192.0.2.9", "accessIPv6": "2001:2001::3",
         "security_groups": [{"name": "default"}]},
    )  # fmt: skip
    assert made.status_code == 202, made.text
    server_id = made.json()["server"]["id"]
    shown = _show(client, server_id)  # still being built, or built
    assert (shown["accessIPv4"], shown["accessIPv6"]) == ("192.0.2.9", "2001:2001::3")
    assert (shown["description"], shown["locked"]) == (None, False)
    server = w.wait(client, server_id)
    assert (server["accessIPv4"], server["accessIPv6"]) == ("192.0.2.9", "2001:2001::3")


def test_a_rebuild_whose_spawn_fails_ends_in_error_still_holding_its_claim(
    start_stack: StackFactory,
) -> None:
    stack, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    allocations = w.allocations(client, server_id)
    stack.agents["cn1"].driver.failures.next_calls = 1
    assert _act(client, server_id, {"rebuild": {"imageRef": image}}).status_code == 202
    server = _until(client, server_id, "ERROR")
    assert "Rebuild failed" in server["fault"]["message"]
    assert w.allocations(client, server_id) == allocations
    last = w.ok(client.get(
        f"{SERVERS}/{server_id}/os-instance-actions/{_last_request(client, server_id)}",
        headers=w.COMPUTE,
    ))["instanceAction"]  # fmt: skip
    assert (last["action"], last["message"]) == ("rebuild", "Error")
    assert [e["result"] for e in last["events"]] == ["Error"]
    # Rebuilt again (an ERROR server may be), it runs.
    assert _act(client, server_id, {"rebuild": {"imageRef": image}}).status_code == 202
    _until(client, server_id, "ACTIVE")
    assert server_id in stack.agents["cn1"].driver.running

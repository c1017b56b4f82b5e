"""The guest of a server through the Compute API of a running stack: rescue and unrescue,
changePassword, the console output, and what a create or rebuild gives the guest (disk
config, personality files, user data, config drive), with Nova's states and codes and what the
simulated guest then has."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.db import images, instances
from berth.compute.host.guest import Guest
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory
from tests.e2e.test_server_actions import (
    OWNER,
    SERVERS,
    _act,
    _actions,
    _booted,
    _refused,
    _show,
    _stack,
    _until,
)

AT_2_56 = {**w.COMPUTE, "openstack-api-version": "compute 2.56"}
AT_2_57 = {**w.COMPUTE, "openstack-api-version": "compute 2.57"}

# The request schema (berth/compute/api/schemas/server.py) refuses another value.
DISK_CONFIG_REFUSED = "is not one of ['AUTO', 'MANUAL'"


def _guest(stack: Stack, server_id: str) -> Guest:
    guest = stack.agents["cn1"].driver.guest(server_id)
    assert guest is not None
    return guest


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_rescue_boots_the_guest_from_the_rescue_image_and_back(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image, adminPass="first-password")
    assert _guest(stack, server_id).admin_password == "first-password"
    answer = _act(client, server_id, {"rescue": {"adminPass": "rescue-me"}})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"adminPass": "rescue-me"}
    server = _until(client, server_id, "RESCUE")
    assert (server["OS-EXT-STS:vm_state"], server["OS-EXT-STS:power_state"]) == ("rescued", 1)
    guest = _guest(stack, server_id)
    assert guest.rescue_image == image and "rescue: the server's disk" in guest.console_text()
    # A rescued server refuses what Nova refuses it.
    _refused(_act(client, server_id, {"reboot": {"type": "HARD"}}), 409, "vm_state rescued")
    _refused(_act(client, server_id, {"rebuild": {"imageRef": image}}), 409, "vm_state rescued")
    _refused(_act(client, server_id, {"rescue": None}), 409, "vm_state rescued")
    assert _act(client, server_id, {"unrescue": None}).status_code == 202
    server = _until(client, server_id, "ACTIVE")
    assert server["OS-EXT-STS:power_state"] == 1 and _guest(stack, server_id).rescue_image is None
    _refused(_act(client, server_id, {"unrescue": None}), 409, "vm_state active")
    assert _actions(client, server_id) == ["create", "rescue", "unrescue"]
    # Without a password the answer is a new one; a stopped server can be rescued too.
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    answer = _act(client, server_id, {"rescue": None})
    assert answer.status_code == 200 and len(answer.json()["adminPass"]) == 12
    assert _until(client, server_id, "RESCUE")["OS-EXT-STS:power_state"] == 1


def test_rescue_with_another_image_and_its_refusals(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    other = str(uuid.uuid4())
    with stack.api_db.write() as conn:
        images.create(conn, other, {"name": "rescue-image", "visibility": "public"})
    _refused(
        _act(client, server_id, {"rescue": {"rescue_image_ref": str(uuid.uuid4())}}),
        400, "is not supported",
    )  # fmt: skip
    _refused(_act(client, server_id, {"rescue": {"rescue_image_ref": "x"}}), 400, "UUID")
    _refused(_act(client, server_id, {"rescue": {"colour": "red"}}), 400, "")
    _refused(_act(client, str(uuid.uuid4()), {"rescue": None}), 404, "could not be found")
    assert _act(client, server_id, {"lock": None}).status_code == 202
    _refused(_act(client, server_id, {"rescue": None}, OWNER), 409, "is locked")
    assert _act(client, server_id, {"unlock": None}).status_code == 202
    assert _act(client, server_id, {"pause": None}).status_code == 202
    _until(client, server_id, "PAUSED")
    _refused(_act(client, server_id, {"rescue": None}), 409, "vm_state paused")
    assert _act(client, server_id, {"unpause": None}).status_code == 202
    _until(client, server_id, "ACTIVE")
    answer = _act(client, server_id, {"rescue": {"rescue_image_ref": other}}, OWNER)
    assert answer.status_code == 200, answer.text
    _until(client, server_id, "RESCUE")
    assert _guest(stack, server_id).rescue_image == other


def test_change_password_reaches_the_running_guest(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    answer = _act(client, server_id, {"changePassword": {"adminPass": "n3w-pass"}}, OWNER)
    assert answer.status_code == 202, answer.text
    # The answer comes once the guest has it.
    assert _guest(stack, server_id).admin_password == "n3w-pass"
    assert _show(client, server_id)["OS-EXT-STS:task_state"] is None
    assert _actions(client, server_id) == ["create", "changePassword"]
    _refused(_act(client, server_id, {"changePassword": {}}), 400, "")
    _refused(_act(client, server_id, {"changePassword": {"adminPass": 7}}), 400, "")
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    _refused(
        _act(client, server_id, {"changePassword": {"adminPass": "x"}}), 409, "vm_state stopped"
    )
    assert _guest(stack, server_id).admin_password == "n3w-pass"


def _console(client: httpx.Client, server_id: str, argument: Any) -> httpx.Response:
    return _act(client, server_id, {"os-getConsoleOutput": argument})


def test_the_console_output_tells_the_guest_s_life(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image, name="console-vm")
    whole = w.ok(_console(client, server_id, {}))["output"]
    assert f"Booting from image {image}" in whole and "console-vm login:" in whole
    assert w.ok(_console(client, server_id, {"length": -1}))["output"] == whole
    assert w.ok(_console(client, server_id, {"length": None}))["output"] == whole
    three = w.ok(_console(client, server_id, {"length": 3}))["output"]
    assert three.split("\n") == whole.split("\n")[-3:]
    assert w.ok(_console(client, server_id, {"length": "2"}))["output"].count("\n") == 1
    assert w.ok(_console(client, server_id, {"length": 0}))["output"] == ""
    for bad in (-2, "-2", "three", 1.5, True):
        _refused(_console(client, server_id, {"length": bad}), 400, "")
    _refused(_console(client, server_id, {"lines": 3}), 400, "")
    assert _act(client, server_id, {"reboot": {"type": "SOFT"}}).status_code == 202
    _until(client, server_id, "ACTIVE")
    assert _act(client, server_id, {"os-stop": None}).status_code == 202
    _until(client, server_id, "SHUTOFF")
    after = w.ok(_console(client, server_id, {"length": -1}))["output"]
    assert "reboot: Restarting system" in after and after.endswith("reboot: Power down")
    # The owner reads it; another project does not see the server.
    assert _console(client, server_id, {}).status_code == 200
    stranger = {**w.COMPUTE, "x-auth-token": "eve:elsewhere", "x-roles": "member,reader"}
    assert _act(client, server_id, {"os-getConsoleOutput": {}}, stranger).status_code == 404


def test_a_server_without_a_host_has_no_console(start_stack: StackFactory) -> None:
    stack, client, _, image = _stack(start_stack)
    huge = w.flavor_and_image(stack, vcpus=64)[0]
    server_id = w.boot(client, huge, image, "none")
    assert w.wait(client, server_id)["status"] == "ERROR"
    _refused(_console(client, server_id, {}), 409, "is not ready")


def test_disk_config_on_create_update_rebuild_and_resize(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    answer = client.post(SERVERS, headers=w.COMPUTE, json={"server": {
        "name": "dc", "flavorRef": flavor, "imageRef": image, "networks": "none",
        "OS-DCF:diskConfig": "AUTO",
    }})  # fmt: skip
    assert answer.status_code == 202, answer.text
    assert answer.json()["server"]["OS-DCF:diskConfig"] == "AUTO"
    server_id = answer.json()["server"]["id"]
    assert w.wait(client, server_id)["OS-DCF:diskConfig"] == "AUTO"
    updated = client.put(
        f"{SERVERS}/{server_id}",
        headers=w.COMPUTE,
        json={"server": {"OS-DCF:diskConfig": "MANUAL"}},
    )
    assert w.ok(updated)["server"]["OS-DCF:diskConfig"] == "MANUAL"
    rebuilt = _act(client, server_id, {"rebuild": {"imageRef": image, "OS-DCF:diskConfig": "AUTO"}})
    assert rebuilt.status_code == 202 and rebuilt.json()["server"]["OS-DCF:diskConfig"] == "AUTO"
    assert _until(client, server_id, "ACTIVE")["OS-DCF:diskConfig"] == "AUTO"
    bigger = w.flavor_and_image(stack, vcpus=4)[0]
    resized = _act(
        client, server_id, {"resize": {"flavorRef": bigger, "OS-DCF:diskConfig": "MANUAL"}}
    )
    assert resized.status_code == 202, resized.text
    assert _show(client, server_id)["OS-DCF:diskConfig"] == "MANUAL"
    for body in (
        {"server": {"name": "x", "flavorRef": flavor, "imageRef": image, "networks": "none",
                    "OS-DCF:diskConfig": "auto"}},
    ):  # fmt: skip
        _refused(client.post(SERVERS, headers=w.COMPUTE, json=body), 400, DISK_CONFIG_REFUSED)
    _refused(
        client.put(f"{SERVERS}/{server_id}", headers=w.COMPUTE,
                   json={"server": {"OS-DCF:diskConfig": "SOMETIMES"}}),
        400, DISK_CONFIG_REFUSED,
    )  # fmt: skip


def test_personality_user_data_and_config_drive_reach_the_guest(start_stack: StackFactory) -> None:
    stack, client, flavor, image = _stack(start_stack)
    body = {"server": {
        "name": "given", "flavorRef": flavor, "imageRef": image, "networks": "none",
        "adminPass": "pw-at-boot", "config_drive": True, "user_data": _b64("#!/bin/sh\necho hi"),
        "metadata": {"role": "web"},
        "personality": [{"path": "/etc/motd", "contents": _b64("hello")}],
    }}  # fmt: skip
    answer = client.post(SERVERS, headers=AT_2_56, json=body)
    assert answer.status_code == 202, answer.text
    server_id = answer.json()["server"]["id"]
    server = w.wait(client, server_id)
    assert server["config_drive"] == "True"
    guest = _guest(stack, server_id)
    assert guest.files == {"/etc/motd": b"hello"} and guest.user_data == b"#!/bin/sh\necho hi"
    assert guest.admin_password == "pw-at-boot"
    assert guest.config_drive is not None
    meta = json.loads(guest.config_drive["openstack/latest/meta_data.json"])
    assert (meta["uuid"], meta["meta"], meta["files"]) == (
        server_id,
        {"role": "web"},
        [{"path": "/etc/motd"}],
    )
    assert guest.config_drive["openstack/latest/user_data"] == b"#!/bin/sh\necho hi"
    assert "cloud-init: wrote /etc/motd (5 bytes)" in guest.console_text()
    # The password and files were for the guest only: the instance keeps neither.
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])
    with cell_db.read() as conn:
        row = instances.get(conn, server_id)
    assert row is not None and row["injected"] is None
    shown = _show(client, server_id)
    assert shown["OS-EXT-SRV-ATTR:user_data"] == _b64("#!/bin/sh\necho hi")
    # Rebuild: new files before 2.57, user data from 2.57 (answered), and a new password.
    rebuilt = _act(client, server_id, {"rebuild": {
        "imageRef": image, "adminPass": "pw-rebuilt",
        "personality": [{"path": "rebuild.txt", "contents": _b64("again")}],
    }}, AT_2_56)  # fmt: skip
    assert rebuilt.status_code == 202, rebuilt.text
    _until(client, server_id, "ACTIVE")
    guest = _guest(stack, server_id)
    assert (guest.files, guest.admin_password) == ({"rebuild.txt": b"again"}, "pw-rebuilt")
    rebuilt = _act(
        client, server_id, {"rebuild": {"imageRef": image, "user_data": _b64("new")}}, AT_2_57
    )
    assert rebuilt.status_code == 202, rebuilt.text
    assert rebuilt.json()["server"]["user_data"] == _b64("new")
    _until(client, server_id, "ACTIVE")
    assert _guest(stack, server_id).user_data == b"new"
    _refused(
        _act(client, server_id, {"rebuild": {"imageRef": image, "personality": []}}, AT_2_57),
        400, "personality",
    )  # fmt: skip
    _refused(
        _act(client, server_id, {"rebuild": {"imageRef": image, "user_data": "x"}}, AT_2_56),
        400, "user_data",
    )  # fmt: skip


def test_personality_limits_and_bad_input(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)

    def create(headers: dict[str, str] = AT_2_56, **server: Any) -> httpx.Response:
        body = {"name": "p", "flavorRef": flavor, "imageRef": image, "networks": "none", **server}
        return client.post(SERVERS, headers=headers, json={"server": body})

    limits = w.ok(client.get("/compute/v2.1/limits", headers=AT_2_56))["limits"]["absolute"]
    assert (limits["maxPersonality"], limits["maxPersonalitySize"]) == (5, 10240)
    files = [{"path": f"/f{i}", "contents": _b64("x")} for i in range(6)]
    _refused(create(personality=files), 403, "Personality file limit exceeded")
    assert create(personality=files[:5]).status_code == 202
    _refused(create(personality=[{"path": "/big", "contents": _b64("x" * 10241)}]), 403, "content")
    _refused(create(personality=[{"path": "/" + "p" * 255, "contents": ""}]), 403, "path")
    _refused(create(personality=[{"path": "/f", "contents": "not base64!"}]), 400, "base64")
    _refused(create(personality=[{"path": "/f"}]), 400, "personality")
    _refused(create(AT_2_57, personality=files[:1]), 400, "personality")
    _refused(create(user_data="not base64!"), 400, "user_data")
    _refused(create(user_data="A" * 65536), 400, "user_data")
    _refused(create(config_drive="sometimes"), 400, "config_drive")
    quota = client.put(
        "/compute/v2.1/os-quota-sets/admin", headers=AT_2_56,
        json={"quota_set": {"injected_files": 1}},
    )  # fmt: skip
    assert quota.status_code == 200, quota.text
    _refused(create(personality=files[:2]), 403, "limit is 1")

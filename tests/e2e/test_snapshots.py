"""Snapshots: ``createImage`` makes an image a host uploads the guest's disk to, which boots;
shelving keeps ``<name>-shelved`` until the server is unshelved or deleted; the compute API's
``/images`` proxy shows and changes them in Nova's shapes up to 2.35."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from berth.allinone.stack import Stack
from berth.compute.db import flavors, images
from berth.compute.host.driver import DISK_BYTES
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

V2_1 = {"openstack-api-version": "compute 2.1"}
V2_45 = {"openstack-api-version": "compute 2.45"}
FLAVOR = "snap-flavor"


def _booted(start_stack: StackFactory) -> tuple[Stack, httpx.Client, str, str]:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, "vcpus": 8,
                                        "memory_mb": 16384, "disk_gb": 100}]}
    )  # fmt: skip
    base = str(uuid.uuid4())
    with stack.api_db.write() as conn:
        flavors.create(conn, FLAVOR, FLAVOR, 1, 512, 5)
        images.create(
            conn, base,
            {"name": "base", "min_ram": 64, "min_disk": 1, "disk_format": "qcow2",
             "properties": {"os_distro": "cirros", "img_signature": "sig"}},
        )  # fmt: skip
    server_id = w.boot(client, FLAVOR, base, "none", name="snapper")
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return stack, client, server_id, base


def _action(
    client: httpx.Client, server_id: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    return client.post(f"/compute/v2.1/servers/{server_id}/action", json=body, headers=headers)


def _image(client: httpx.Client, image_id: str) -> httpx.Response:
    return client.get(f"/compute/v2.1/images/{image_id}", headers=V2_1)


def _until_image(client: httpx.Client, image_id: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        image = w.ok(_image(client, image_id))["image"]
        if image["status"] == status:
            return image  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"image {image_id} is {image['status']}, not {status}")


def _until_idle(client: httpx.Client, server_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))
        if server["server"]["OS-EXT-STS:task_state"] is None:
            return server["server"]  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} still has a task")


def test_create_image_snapshots_the_server_and_the_snapshot_boots(
    start_stack: StackFactory,
) -> None:
    stack, client, server_id, base = _booted(start_stack)
    body = {"createImage": {"name": "snap", "metadata": {"purpose": "test"}}}
    answer = _action(client, server_id, body, V2_1)
    assert answer.status_code == 202, answer.text
    image_id = answer.headers["location"].rsplit("/", 1)[-1]
    assert answer.headers["location"] == f"http://berth/compute/v2.1/images/{image_id}"
    # The host copies the disk for a while: the server is busy, the image SAVING.
    server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]
    assert server["OS-EXT-STS:task_state"] in (
        "image_snapshot", "image_pending_upload", "image_uploading",
    )  # fmt: skip
    saving = w.ok(_image(client, image_id))["image"]
    assert (saving["status"], saving["progress"]) in (("SAVING", 25), ("SAVING", 50))
    second = _action(client, server_id, {"createImage": {"name": "again"}}, V2_1)
    assert second.status_code == 409, second.text

    image = _until_image(client, image_id, "ACTIVE")
    assert (image["name"], image["progress"], image["minRam"]) == ("snap", 100, 64)
    assert image["minDisk"] == 5  # the flavor's disk, larger than the base image's 1
    assert image["OS-EXT-IMG-SIZE:size"] == DISK_BYTES
    assert image["server"]["id"] == server_id
    metadata = image["metadata"]
    assert metadata["instance_uuid"] == server_id and metadata["image_type"] == "snapshot"
    assert metadata["base_image_ref"] == base and metadata["purpose"] == "test"
    assert metadata["os_distro"] == "cirros" and "img_signature" not in metadata
    glance = w.ok(client.get(f"/image/v2/images/{image_id}"))
    assert (glance["visibility"], glance["owner"], glance["disk_format"]) == (
        "private", "admin", "qcow2",
    )  # fmt: skip
    data = client.get(f"/image/v2/images/{image_id}/file")
    assert data.content.startswith(f"berth simulated disk of server {server_id}".encode())
    assert _until_idle(client, server_id)["status"] == "ACTIVE"
    actions = w.ok(
        client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions", headers=w.COMPUTE)
    )["instanceActions"]
    assert "createImage" in [a["action"] for a in actions]

    # The snapshot boots.
    copy = w.boot(client, FLAVOR, image_id, "none", name="copy")
    assert w.wait(client, copy)["status"] == "ACTIVE"

    # From 2.45 the answer is the image's id; the proxy is gone from 2.36.
    later = _action(client, server_id, {"createImage": {"name": "later"}}, V2_45)
    assert later.status_code == 202 and "location" not in later.headers
    later_id = later.json()["image_id"]
    gone = client.get(f"/compute/v2.1/images/{later_id}", headers=V2_45)
    assert gone.status_code == 404
    _until_image(client, later_id, "ACTIVE")
    del stack


def test_a_snapshot_deleted_while_it_saves_ends_the_task(start_stack: StackFactory) -> None:
    _, client, server_id, _ = _booted(start_stack)
    answer = _action(client, server_id, {"createImage": {"name": "brief"}}, V2_45)
    image_id = answer.json()["image_id"]
    assert client.delete(f"/compute/v2.1/images/{image_id}", headers=V2_1).status_code == 204
    assert _image(client, image_id).status_code == 404
    assert _until_idle(client, server_id)["status"] == "ACTIVE"
    assert _image(client, image_id).status_code == 404


def test_bad_snapshot_requests(start_stack: StackFactory) -> None:
    _, client, server_id, _ = _booted(start_stack)
    for bad in (
        {"name": "x" * 256},
        {"name": "m", "metadata": {"": ""}},
        {"name": "m", "metadata": {"a" * 256: "b"}},
        {"name": "m", "metadata": {"k": "v" * 256}},
        {"metadata": {}},
    ):
        answer = _action(client, server_id, {"createImage": bad}, V2_1)
        assert answer.status_code == 400, (bad, answer.text)
    missing = _action(client, str(uuid.uuid4()), {"createImage": {"name": "m"}}, V2_1)
    assert missing.status_code == 404
    # Refused before anything was made.
    assert w.ok(client.get("/image/v2/images", params={"name": "m"}))["images"] == []


def test_shelving_keeps_an_image_until_unshelve_or_delete(start_stack: StackFactory) -> None:
    _, client, server_id, _ = _booted(start_stack)

    def shelved_images() -> list[dict[str, Any]]:
        found = w.ok(client.get("/image/v2/images", params={"name": "snapper-shelved"}))
        return found["images"]  # type: ignore[no-any-return]

    assert _action(client, server_id, {"shelve": None}, w.COMPUTE).status_code == 202
    assert _until_idle(client, server_id)["status"] == "SHELVED_OFFLOADED"
    (shelved,) = shelved_images()
    assert (shelved["status"], shelved["size"]) == ("active", DISK_BYTES)
    assert shelved["instance_uuid"] == server_id and shelved["image_type"] == "snapshot"
    assert _action(client, server_id, {"unshelve": None}, w.COMPUTE).status_code == 202
    assert _until_idle(client, server_id)["status"] == "ACTIVE"
    assert shelved_images() == []

    assert _action(client, server_id, {"shelve": None}, w.COMPUTE).status_code == 202
    assert _until_idle(client, server_id)["status"] == "SHELVED_OFFLOADED"
    assert len(shelved_images()) == 1
    assert client.delete(f"/compute/v2.1/servers/{server_id}").status_code == 204
    assert shelved_images() == []


def test_the_image_proxy_lists_filters_and_changes_metadata(start_stack: StackFactory) -> None:
    _, client, server_id, base = _booted(start_stack)
    answer = _action(client, server_id, {"createImage": {"name": "snap"}}, V2_45)
    snapshot = answer.json()["image_id"]
    _until_image(client, snapshot, "ACTIVE")
    _until_idle(client, server_id)

    def listed(path: str = "/compute/v2.1/images", **params: str) -> list[str]:
        return [i["id"] for i in w.ok(client.get(path, params=params, headers=V2_1))["images"]]

    assert set(listed()) >= {snapshot, base}
    assert listed(type="snapshot") == [snapshot]
    assert listed(server=server_id) == [snapshot]
    assert listed(server=f"http://berth/compute/v2.1/servers/{server_id}") == [snapshot]
    assert listed(name="base") == [base]
    assert snapshot in listed(status="ACTIVE")
    assert listed("/compute/v2.1/images/detail", minDisk="5") == [snapshot]
    assert len(listed(limit="1")) == 1
    brief = w.ok(client.get("/compute/v2.1/images", params={"limit": "1"}, headers=V2_1))
    assert set(brief["images"][0]) == {"id", "name", "links"}
    assert brief["images_links"][0]["rel"] == "next"
    assert client.get("/compute/v2.1/images", headers=w.COMPUTE).status_code == 404

    path = f"/compute/v2.1/images/{snapshot}/metadata"
    put = w.ok(client.put(path, json={"metadata": {"a": "1", "b": "2"}}, headers=V2_1))
    assert put == {"metadata": {"a": "1", "b": "2"}}  # the snapshot's properties replaced
    post = w.ok(client.post(path, json={"metadata": {"b": "3", "c": "4"}}, headers=V2_1))
    assert post == {"metadata": {"a": "1", "b": "3", "c": "4"}}
    assert w.ok(client.get(f"{path}/a", headers=V2_1)) == {"meta": {"a": "1"}}
    item = client.put(f"{path}/a", json={"meta": {"a": "9"}}, headers=V2_1)
    assert w.ok(item) == {"meta": {"a": "9"}}
    mismatch = client.put(f"{path}/a", json={"meta": {"z": "9"}}, headers=V2_1)
    assert mismatch.status_code == 400
    assert client.delete(f"{path}/a", headers=V2_1).status_code == 204
    assert client.get(f"{path}/a", headers=V2_1).status_code == 404
    assert client.delete(f"{path}/a", headers=V2_1).status_code == 404
    assert w.ok(client.get(path, headers=V2_1)) == {"metadata": {"b": "3", "c": "4"}}
    assert client.get(f"/compute/v2.1/images/{uuid.uuid4()}", headers=V2_1).status_code == 404
    assert client.delete("/compute/v2.1/images/", headers=V2_1).status_code == 404
    assert client.delete(f"/compute/v2.1/images/{snapshot}", headers=V2_1).status_code == 204
    assert _image(client, snapshot).status_code == 404


def test_backups_keep_the_newest_of_their_type(start_stack: StackFactory) -> None:
    _, client, server_id, _ = _booted(start_stack)

    def backup(name: str, backup_type: str, rotation: int) -> httpx.Response:
        # Images keep their creation time to the second (docs/compute.md): two backups made in
        # one second have no order for the rotation to go by.
        time.sleep(1.0 - time.time() % 1.0 + 0.01)
        body = {"createBackup": {"name": name, "backup_type": backup_type, "rotation": rotation}}
        answer = _action(client, server_id, body, V2_45)
        assert answer.status_code == 202, answer.text
        _until_idle(client, server_id)
        return answer

    def kept(backup_type: str) -> list[str]:
        params = {"instance_uuid": server_id, "image_type": "backup", "backup_type": backup_type,
                  "sort_key": "name", "sort_dir": "asc"}  # fmt: skip
        return [i["name"] for i in w.ok(client.get("/image/v2/images", params=params))["images"]]

    first = backup("b1", "daily", 2).json()["image_id"]
    assert w.ok(client.get(f"/image/v2/images/{first}"))["status"] == "active"
    backup("b2", "daily", 2)
    backup("w1", "weekly", 2)
    assert kept("daily") == ["b1", "b2"]
    backup("b3", "daily", 2)
    assert kept("daily") == ["b2", "b3"]  # b1, the oldest, rotated out
    assert kept("weekly") == ["w1"]
    # Rotation 0 keeps none (the new one included) and answers no image.
    assert backup("w2", "weekly", 0).content == b""
    assert kept("weekly") == []
    actions = w.ok(
        client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions", headers=w.COMPUTE)
    )["instanceActions"]
    assert [a["action"] for a in actions].count("createBackup") == 5
    for bad in ({"name": "n", "backup_type": "daily"}, {"name": "n", "backup_type": "daily",
                                                         "rotation": -1}):  # fmt: skip
        assert _action(client, server_id, {"createBackup": bad}, V2_45).status_code == 400

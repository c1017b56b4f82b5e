"""A server's metadata and tags change only in the states Nova allows, and are read from its
BuildRequest while it is being scheduled."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from berth.compute.db import build_requests, instances
from berth.compute.db import cells as mappings
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import ADMIN, CELL1_UUID, client_for, version

SERVER = "5e2b9f5e-0000-4000-8000-0000000000aa"
URL = f"/v2.1/servers/{SERVER}"
V26 = version(26)


@pytest.fixture
def admin(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service, ADMIN) as client:
        yield client


def _server(service: ComputeService, vm_state: str, task_state: str | None) -> None:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).write() as conn:
        instances.create(conn, {
            "uuid": SERVER, "project_id": "p", "user_id": "u", "display_name": "vm",
            "vm_state": vm_state, "task_state": task_state, "flavor": {}, "image_ref": "img",
            "metadata": {"k": "v"}, "tags": ["t"],
        })  # fmt: skip
    with service.api_db.write() as conn:
        mappings.create_instance_mapping(conn, SERVER, "p", "u")
        mappings.set_instance_cell(conn, SERVER, cell.id)


def _changes(client: httpx.Client) -> list[httpx.Response]:
    return [
        client.put(f"{URL}/metadata", json={"metadata": {"a": "b"}}),
        client.post(f"{URL}/metadata", json={"metadata": {"a": "b"}}),
        client.put(f"{URL}/metadata/a", json={"meta": {"a": "b"}}),
        client.delete(f"{URL}/metadata/k"),
        client.put(f"{URL}/tags", json={"tags": ["u"]}, headers=V26),
        client.put(f"{URL}/tags/u", headers=V26),
        client.delete(f"{URL}/tags/t", headers=V26),
        client.delete(f"{URL}/tags", headers=V26),
    ]


def _unchanged(client: httpx.Client) -> None:
    assert client.get(f"{URL}/metadata").json() == {"metadata": {"k": "v"}}
    assert client.get(f"{URL}/tags", headers=V26).json() == {"tags": ["t"]}


@pytest.mark.parametrize(
    ("vm_state", "task_state"),
    [("error", None), ("shelved_offloaded", None), ("building", "spawning"), ("rescued", None)],
)
def test_neither_changes_outside_the_allowed_states(
    compute_service: ComputeService, admin: httpx.Client, vm_state: str, task_state: str | None
) -> None:
    _server(compute_service, vm_state, task_state)
    for answer in _changes(admin):
        assert answer.status_code == 409, answer.text
        assert f"vm_state {vm_state}" in answer.json()["conflictingRequest"]["message"]
    _unchanged(admin)


@pytest.mark.parametrize("vm_state", ["active", "stopped", "paused", "suspended"])
def test_metadata_waits_for_a_task_to_end_tags_do_not(
    compute_service: ComputeService, admin: httpx.Client, vm_state: str
) -> None:
    _server(compute_service, vm_state, "rebooting")
    answers = _changes(admin)
    for answer in answers[:4]:
        assert answer.status_code == 409, answer.text
        assert "task_state rebooting" in answer.json()["conflictingRequest"]["message"]
    # The tags became ["u"], so adding "u" changes nothing and "t" is gone already.
    assert [answer.status_code for answer in answers[4:]] == [200, 204, 404, 204]
    assert admin.get(f"{URL}/metadata").json() == {"metadata": {"k": "v"}}
    assert admin.get(f"{URL}/tags", headers=V26).json() == {"tags": []}


def test_a_server_being_scheduled_is_read_from_its_build_request(
    compute_service: ComputeService, admin: httpx.Client
) -> None:
    with compute_service.api_db.write() as conn:
        instance = {"name": "vm", "flavor": {}, "image": {"id": "img"},
                    "metadata": {"k": "v"}, "tags": ["t"]}  # fmt: skip
        build_requests.create(conn, SERVER, "p", "u", instance)
        mappings.create_instance_mapping(conn, SERVER, "p", "u")
    _unchanged(admin)
    assert admin.get(f"{URL}/ips").json() == {"addresses": {}}
    for answer in _changes(admin):
        assert answer.status_code == 409, answer.text
        assert "building" in answer.json()["conflictingRequest"]["message"]
    _unchanged(admin)

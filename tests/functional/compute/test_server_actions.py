"""Server actions against the compute API alone: what each hands to the host (typed), and what a
bus that cannot take the message leaves (the server as it was, a 503)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.bus import BusUnavailable
from berth.compute.cells import Cell
from berth.compute.db import cells as mappings
from berth.compute.db import images, instances
from berth.compute.service import ComputeService
from tests.conftest import MEMBER_ROLES
from tests.functional.compute.conftest import CELL1_UUID, client_for
from tests.functional.compute.test_conductors import Sent

SERVER = "5e2b9f5e-0000-4000-8000-000000000002"
ACTION = f"/v2.1/servers/{SERVER}/action"
IMAGE = "1a2b3c4d-0000-4000-8000-000000000001"
OWNER = {"x-auth-token": "u:p", "x-roles": MEMBER_ROLES}
FLAVOR = {"id": "1", "name": "tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1,
          "ephemeral_gb": 0, "swap": 0, "extra_specs": {}}  # fmt: skip


class Unreachable:
    """Cells whose bus takes no message."""

    def host(self, cell: Cell, host: str) -> Any:
        return self

    def __getattr__(self, method: str) -> Any:
        def refuse(*args: Any) -> None:
            raise BusUnavailable("the bus is down")

        return refuse


@pytest.fixture
def owner(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service, OWNER) as client:
        yield client


def _cell(service: ComputeService) -> Cell:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    return cell


def _server(service: ComputeService, vm_state: str = "active", host: str | None = "h1") -> None:
    cell = _cell(service)
    with service.cells.database(cell).write() as conn:
        instances.create(conn, {
            "uuid": SERVER, "project_id": "p", "user_id": "u", "display_name": "vm",
            "hostname": "vm", "host": host, "node": host, "vm_state": vm_state,
            "power_state": 1, "flavor": FLAVOR, "image_ref": "old-image",
        })  # fmt: skip
    with service.api_db.write() as conn:
        mappings.create_instance_mapping(conn, SERVER, "p", "u")
        mappings.set_instance_cell(conn, SERVER, cell.id)
        images.create(conn, IMAGE, {"name": "new", "visibility": "public"})


def _row(service: ComputeService) -> Any:
    with service.cells.database(_cell(service)).read() as conn:
        return instances.get(conn, SERVER)


def test_each_action_reaches_the_server_s_host_as_one_typed_message(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    sent = Sent()
    compute_service.cell_rpc = sent  # type: ignore[assignment]
    _server(compute_service)
    assert owner.post(ACTION, json={"reboot": {"type": "HARD"}}).status_code == 202
    assert _row(compute_service)["task_state"] == "rebooting_hard"
    with compute_service.cells.database(_cell(compute_service)).write() as conn:
        instances.update(conn, SERVER, {"task_state": None})  # the host's part, done
    answer = owner.post(ACTION, json={"rebuild": {"imageRef": IMAGE, "name": "new"}})
    assert answer.status_code == 202, answer.text
    assert answer.json()["server"]["status"] == "REBUILD"
    assert sent.messages == [
        ("h1", "change_power", (SERVER, "reboot_hard")),
        ("h1", "rebuild_instance", (SERVER,)),
    ]


@pytest.mark.parametrize("body", [{"os-stop": None}, {"reboot": {"type": "SOFT"}}, {"pause": {}}])
def test_a_power_change_the_bus_cannot_take_leaves_the_server_as_it_was(
    compute_service: ComputeService, owner: httpx.Client, body: dict[str, Any]
) -> None:
    compute_service.cell_rpc = Unreachable()  # type: ignore[assignment]
    _server(compute_service)
    answer = owner.post(ACTION, json=body)
    assert answer.status_code == 503, answer.text
    assert list(answer.json()) == ["serviceUnavailable"]
    row = _row(compute_service)
    assert (row["vm_state"], row["task_state"]) == ("active", None)


def test_a_rebuild_the_bus_cannot_take_puts_the_image_and_name_back(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    compute_service.cell_rpc = Unreachable()  # type: ignore[assignment]
    _server(compute_service, vm_state="stopped")
    answer = owner.post(ACTION, json={"rebuild": {"imageRef": IMAGE, "name": "new"}})
    assert answer.status_code == 503, answer.text
    row = _row(compute_service)
    assert (row["image_ref"], row["display_name"], row["task_state"]) == ("old-image", "vm", None)


def test_a_server_without_a_host_cannot_be_acted_on(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    compute_service.cell_rpc = Sent()  # type: ignore[assignment]
    _server(compute_service, vm_state="error", host=None)
    for body in ({"os-stop": None}, {"rebuild": {"imageRef": IMAGE}}):
        answer = owner.post(ACTION, json=body)
        assert answer.status_code == 409, answer.text
        assert "has no host" in answer.json()["conflictingRequest"]["message"]


def test_inject_network_info_is_an_admin_s_recorded_action(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    compute_service.cell_rpc = Sent()  # type: ignore[assignment]
    _server(compute_service)
    assert owner.post(ACTION, json={"injectNetworkInfo": None}).status_code == 403
    with client_for(compute_service, {"x-auth-token": "admin"}) as admin:
        assert admin.post(ACTION, json={"injectNetworkInfo": None}).status_code == 202
        actions = admin.get(f"/v2.1/servers/{SERVER}/os-instance-actions").json()
    assert [a["action"] for a in actions["instanceActions"]] == ["injectNetworkInfo"]
    row = _row(compute_service)
    assert (row["vm_state"], row["task_state"]) == ("active", None)


def test_a_server_without_a_host_has_no_network_info_to_inject(
    compute_service: ComputeService,
) -> None:
    _server(compute_service, vm_state="error", host=None)
    with client_for(compute_service, {"x-auth-token": "admin"}) as admin:
        answer = admin.post(ACTION, json={"injectNetworkInfo": None})
    assert answer.status_code == 409, answer.text


def test_an_action_on_a_missing_server_is_a_404_whatever_the_action(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    missing = "/v2.1/servers/5e2b9f5e-0000-4000-8000-00000000dead/action"
    for body in ({"no-such-action": None}, {"os-getConsoleOutput": {"length": 1}}):
        answer = owner.post(missing, json=body)
        assert answer.status_code == 404, answer.text
    _server(compute_service)
    answer = owner.post(ACTION, json={"no-such-action": None})
    assert answer.status_code == 400
    assert "There is no such action: no-such-action" in answer.text

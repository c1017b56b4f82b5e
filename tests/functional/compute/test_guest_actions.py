"""The guest actions against the compute API alone: rescue and unrescue hand typed casts to the
server's host, changePassword and the console output wait for its answer, and a host that
cannot be reached (or refuses) leaves the server as it was."""

from __future__ import annotations

from typing import Any

import httpx

from berth.compute import rpc
from berth.compute.cells import Cell
from berth.compute.db import instances
from berth.compute.service import ComputeService
from tests.functional.compute.test_conductors import Sent
from tests.functional.compute.test_server_actions import (
    ACTION,
    IMAGE,
    SERVER,
    Unreachable,
    _cell,
    _row,
    _server,
    owner,
)

__all__ = ["owner"]


class Refusing:
    """A host whose guest is not running: every call is refused as the host agent refuses."""

    def host(self, cell: Cell, host: str) -> Any:
        return self

    def set_admin_password(self, instance_uuid: str, admin_pass: str) -> None:
        raise rpc.GuestRefused(409, "Failed to set the admin password: not running")

    def get_console_output(self, instance_uuid: str) -> str:
        raise rpc.ServiceUnreachable("Host h1 did not answer get_console_output within 1 s.")


def test_rescue_and_unrescue_reach_the_host_as_typed_casts(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    sent = Sent()
    compute_service.cell_rpc = sent  # type: ignore[assignment]
    _server(compute_service)
    answer = owner.post(ACTION, json={"rescue": {"adminPass": "pw", "rescue_image_ref": IMAGE}})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"adminPass": "pw"}
    assert _row(compute_service)["task_state"] == "rescuing"
    # The host's part, done.
    with compute_service.cells.database(_cell(compute_service)).write() as conn:
        instances.update(conn, SERVER, {"vm_state": "rescued", "task_state": None})
    assert owner.post(ACTION, json={"unrescue": None}).status_code == 202
    assert _row(compute_service)["task_state"] == "unrescuing"
    assert sent.messages == [
        ("h1", "rescue_instance", (SERVER, IMAGE, "pw")),
        ("h1", "unrescue_instance", (SERVER,)),
    ]


def test_a_rescue_without_an_image_boots_the_server_s_own(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    sent = Sent()
    compute_service.cell_rpc = sent  # type: ignore[assignment]
    _server(compute_service, vm_state="stopped")
    answer = owner.post(ACTION, json={"rescue": {}})
    assert answer.status_code == 200, answer.text
    ((_, method, (server, image, password)),) = sent.messages
    assert (method, server, image, password) == (
        "rescue_instance", SERVER, "old-image", answer.json()["adminPass"],
    )  # fmt: skip


def test_a_rescue_the_bus_cannot_take_leaves_the_server_as_it_was(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    compute_service.cell_rpc = Unreachable()  # type: ignore[assignment]
    _server(compute_service)
    answer = owner.post(ACTION, json={"rescue": None})
    assert answer.status_code == 503, answer.text
    row = _row(compute_service)
    assert (row["vm_state"], row["task_state"]) == ("active", None)


def test_a_refused_or_unanswered_password_change_puts_the_task_back(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    _server(compute_service)
    for cells, status in ((Refusing(), 409), (Unreachable(), 503)):
        compute_service.cell_rpc = cells  # type: ignore[assignment]
        answer = owner.post(ACTION, json={"changePassword": {"adminPass": "pw"}})
        assert answer.status_code == status, answer.text
        assert _row(compute_service)["task_state"] is None


def test_a_console_the_host_does_not_answer_is_a_503(
    compute_service: ComputeService, owner: httpx.Client
) -> None:
    compute_service.cell_rpc = Refusing()  # type: ignore[assignment]
    _server(compute_service)
    answer = owner.post(ACTION, json={"os-getConsoleOutput": {"length": 5}})
    assert answer.status_code == 503, answer.text
    assert list(answer.json()) == ["serviceUnavailable"]

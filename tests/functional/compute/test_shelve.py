"""POST /servers/{id}/action shelve, shelveOffload, unshelve: the states each takes, what it
hands over (to the server's host, or to the super-conductor), the action it records, the
answers to wrong states and wrong arguments, and Nova's os-shelve policy rules."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from berth.compute import actions
from berth.compute.conductor.build import SuperConductor
from berth.compute.conductor.cell import CellConductor
from berth.compute.db import build_requests, instance_actions, instances, request_specs
from berth.compute.db import cells as mappings
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import NoValidHost
from berth.compute.service import ComputeService
from tests.conftest import MEMBER_ROLES
from tests.functional.compute.conftest import ADMIN, CELL1_UUID, client_for
from tests.functional.compute.test_conductors import (
    PORT,
    FakeNetwork,
    FakePlacement,
    Sent,
    selection,
)
from tests.unit.compute.factories import spec

SERVER = "5e2b9f5e-0000-4000-8000-000000000001"
ACTION = f"/v2.1/servers/{SERVER}/action"
OWNER = {"x-auth-token": "u:p", "x-roles": MEMBER_ROLES}
READER = {"x-auth-token": "u:p", "x-roles": "reader"}
STRANGER = {"x-auth-token": "v:q", "x-roles": MEMBER_ROLES}


@dataclass
class Conductor:
    """The super-conductor as the API reaches it: what it was sent."""

    messages: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        self.messages.append(("build_instances", (list(instance_uuids), request_id)))

    def unshelve_instance(self, instance_uuid: str, request_id: str) -> None:
        self.messages.append(("unshelve_instance", (instance_uuid,)))


@pytest.fixture
def world(compute_service: ComputeService) -> ComputeService:
    compute_service.cell_rpc = Sent()  # type: ignore[assignment]
    compute_service.conductor = Conductor()
    return compute_service


def _client(service: ComputeService, headers: dict[str, str]) -> Iterator[httpx.Client]:
    with client_for(service, headers) as client:
        yield client


@pytest.fixture
def owner(world: ComputeService) -> Iterator[httpx.Client]:
    yield from _client(world, OWNER)


@pytest.fixture
def admin(world: ComputeService) -> Iterator[httpx.Client]:
    yield from _client(world, ADMIN)


def _server(
    service: ComputeService,
    vm_state: str,
    task_state: str | None = None,
    host: str | None = "h1",
    network_info: Sequence[PortEntry] = (),
) -> None:
    """The server in cell1, in this state, on ``host``."""
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).write() as conn:
        instances.create(conn, {
            "uuid": SERVER, "project_id": "p", "user_id": "u", "display_name": "vm",
            "hostname": "vm", "host": host, "node": host, "vm_state": vm_state,
            "task_state": task_state, "power_state": 1, "flavor": {}, "image_ref": "img",
            "network_info": [entry.to_json() for entry in network_info],
        })  # fmt: skip
    with service.api_db.write() as conn:
        mappings.create_instance_mapping(conn, SERVER, "p", "u")
        mappings.set_instance_cell(conn, SERVER, cell.id)


def _row(service: ComputeService) -> Any:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).read() as conn:
        row = instances.get(conn, SERVER)
        recorded = [a["action"] for a in instance_actions.list_actions(conn, SERVER)]
    return row, recorded


def _sent(service: ComputeService) -> list[tuple[str, str, tuple[Any, ...]]]:
    return service.cell_rpc.messages  # type: ignore[attr-defined,no-any-return]


def _error(answer: httpx.Response, status: int, key: str) -> str:
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert list(body) == [key]
    assert body[key]["code"] == status
    return str(body[key]["message"])


@pytest.mark.parametrize("vm_state", ["active", "stopped", "paused", "suspended"])
def test_shelve_casts_to_the_host_with_an_offload_at_once(
    world: ComputeService, owner: httpx.Client, vm_state: str
) -> None:
    _server(world, vm_state)
    answer = owner.post(ACTION, json={"shelve": None})
    assert (answer.status_code, answer.content) == (202, b"")
    assert _sent(world) == [("h1", "shelve_instance", (SERVER, True, None))]
    row, recorded = _row(world)
    assert (row["vm_state"], row["task_state"]) == (vm_state, "shelving")
    assert recorded == ["shelve"]


def test_with_offload_never_the_server_stays_on_its_host(world: ComputeService) -> None:
    world.settings = world.settings.model_copy(update={"shelved_offload_time": -1})
    _server(world, "active")
    with client_for(world, OWNER) as owner:
        assert owner.post(ACTION, json={"shelve": None}).status_code == 202
    assert _sent(world) == [("h1", "shelve_instance", (SERVER, False, None))]


def test_shelve_offload_is_an_admins_on_a_shelved_server(
    world: ComputeService, owner: httpx.Client, admin: httpx.Client
) -> None:
    _server(world, "shelved")
    message = _error(owner.post(ACTION, json={"shelveOffload": None}), 403, "forbidden")
    assert "os_compute_api:os-shelve:shelve_offload" in message
    assert admin.post(ACTION, json={"shelveOffload": None}).status_code == 202
    assert _sent(world) == [("h1", "shelve_offload_instance", (SERVER,))]
    row, recorded = _row(world)
    assert (row["vm_state"], row["task_state"]) == ("shelved", "shelving_offloading")
    assert recorded == ["shelveOffload"]


@pytest.mark.parametrize("vm_state", ["shelved", "shelved_offloaded"])
def test_unshelve_goes_to_the_super_conductor(
    world: ComputeService, owner: httpx.Client, vm_state: str
) -> None:
    _server(world, vm_state, host=None if vm_state == "shelved_offloaded" else "h1")
    assert owner.post(ACTION, json={"unshelve": None}).status_code == 202
    assert world.conductor.messages == [("unshelve_instance", (SERVER,))]  # type: ignore[attr-defined]
    assert _sent(world) == []
    row, recorded = _row(world)
    assert (row["vm_state"], row["task_state"]) == (vm_state, "unshelving")
    assert recorded == ["unshelve"]


@pytest.mark.parametrize(
    ("vm_state", "task_state", "action"),
    [
        ("shelved", None, "shelve"),
        ("shelved_offloaded", None, "shelve"),
        ("error", None, "shelve"),
        ("active", "shelving", "shelve"),
        ("active", None, "shelveOffload"),
        ("shelved_offloaded", None, "shelveOffload"),
        ("active", None, "unshelve"),
        ("shelved", "shelving_offloading", "unshelve"),
        ("shelved_offloaded", "unshelving", "unshelve"),
    ],
)
def test_a_wrong_state_is_a_409_and_changes_nothing(
    world: ComputeService, admin: httpx.Client, vm_state: str, task_state: str | None, action: str
) -> None:
    _server(world, vm_state, task_state)
    message = _error(admin.post(ACTION, json={action: None}), 409, "conflictingRequest")
    assert f"Cannot '{action}' instance {SERVER}" in message
    assert _sent(world) == []
    row, recorded = _row(world)
    assert (row["vm_state"], row["task_state"], recorded) == (vm_state, task_state, [])


def test_a_server_being_scheduled_is_a_409(world: ComputeService, owner: httpx.Client) -> None:
    with world.api_db.write() as conn:
        build_requests.create(conn, SERVER, "p", "u", {"name": "vm"})
        mappings.create_instance_mapping(conn, SERVER, "p", "u")
    message = _error(owner.post(ACTION, json={"shelve": None}), 409, "conflictingRequest")
    assert "building" in message


@pytest.mark.parametrize(
    "body",
    [
        {"shelve": {"now": True}},
        {"shelveOffload": "now"},
        {"unshelve": {"availability_zone": "az1"}},
    ],
)
def test_an_argument_other_than_null_is_a_400(
    world: ComputeService, admin: httpx.Client, body: dict[str, Any]
) -> None:
    _server(world, "shelved")
    message = _error(admin.post(ACTION, json=body), 400, "badRequest")
    if "unshelve" in body:
        # The refusal says which microversion brings unshelve's arguments.
        assert "is not null or {}" in message
        assert "2.77" in message
    else:
        # The action's schema names the action whose argument is wrong.
        assert f"field/attribute {next(iter(body))}." in message
    assert _sent(world) == []


def test_policy_hides_other_projects_servers_and_refuses_readers(world: ComputeService) -> None:
    _server(world, "active")
    with client_for(world, STRANGER) as stranger, client_for(world, READER) as reader:
        for action in ("shelve", "unshelve"):
            _error(stranger.post(ACTION, json={action: None}), 404, "itemNotFound")
            message = _error(reader.post(ACTION, json={action: None}), 403, "forbidden")
            assert f"os_compute_api:os-shelve:{action}" in message
        _error(stranger.post(ACTION, json={"shelveOffload": None}), 403, "forbidden")
    missing = "/v2.1/servers/00000000-0000-4000-8000-000000000000/action"
    with client_for(world, OWNER) as owner:
        _error(owner.post(missing, json={"shelve": None}), 404, "itemNotFound")
    assert _sent(world) == []


# -- the conductors, alone (fake Placement, network, scheduler and cells) ------------------------


@dataclass
class Scheduler:
    """Answers ``answer`` and keeps the spec it was asked with."""

    answer: list[Selection] | Exception
    asked: list[RequestSpec] = field(default_factory=list)

    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        self.asked.append(spec)
        if isinstance(self.answer, Exception):
            raise self.answer
        return [self.answer]


def _offloaded(service: ComputeService, zone: str | None = "az1") -> None:
    """An offloaded server being unshelved, its one port unbound, its spec from its boot."""
    _server(
        service, "shelved_offloaded", "unshelving", host=None,
        network_info=[PortEntry(PORT, "net", "fa:16:3e:00:00:01")],
    )  # fmt: skip
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).write() as conn:
        actions.begin(conn, SERVER, actions.UNSHELVE, "req-unshelve", "u", "p")
    booted = spec(instance_uuids=(SERVER,), availability_zone=zone)
    with service.api_db.write() as conn:
        request_specs.save(conn, SERVER, booted.to_json())


def _conductor(
    service: ComputeService, scheduler: Scheduler, network: FakeNetwork, placement: FakePlacement
) -> tuple[SuperConductor, Sent]:
    sent = Sent()
    conductor = SuperConductor(
        service.api_db, service.cells, placement, network, scheduler, sent,  # type: ignore[arg-type]
    )  # fmt: skip
    return conductor, sent


def _events(service: ComputeService) -> list[tuple[str, str]]:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).read() as conn:
        (action,) = instance_actions.list_actions(conn, SERVER)
        return [(e["event"], e["result"]) for e in instance_actions.events(conn, action["id"])]


def test_unshelve_schedules_in_its_cell_and_zone_then_binds_and_casts(
    world: ComputeService,
) -> None:
    _offloaded(world)
    network, placement = FakeNetwork(refuse={"h1"}), FakePlacement()
    scheduler = Scheduler([selection("h1"), selection("h2")])
    conductor, sent = _conductor(world, scheduler, network, placement)
    conductor.unshelve_instance(SERVER, "req-unshelve")

    (asked,) = scheduler.asked
    assert asked.destination is not None and asked.destination.cell_uuid == CELL1_UUID
    assert (asked.availability_zone, asked.instance_uuids) == ("az1", (SERVER,))
    assert [port.port_id for port in asked.ports] == [PORT]
    # h1 refused the binding: its claim went back, h2 took the server.
    assert sent.messages == [("h2", "unshelve_instance", (SERVER, [], [
        BuildAttempt("h1", "h1 does not reach the segment")
    ]))]  # fmt: skip
    assert list(placement.claims) == [SERVER]
    assert network.ports[PORT]["binding:host_id"] == "h2"
    row, _ = _row(world)
    assert (row["host"], row["vm_state"], row["task_state"]) == (
        "h2",
        "shelved_offloaded",
        "unshelving",
    )
    assert _events(world) == [("conductor_unshelve_instance", "Success")]


def test_unshelve_that_fits_nowhere_is_offloaded_again_holding_nothing(
    world: ComputeService,
) -> None:
    _offloaded(world)
    network, placement = FakeNetwork(), FakePlacement()
    placement.claims[SERVER] = {"late": {}}  # a scheduler that claimed after it timed out
    diagnosis = Diagnosis(hosts=3, placement_hosts=0, available=0)
    scheduler = Scheduler(
        NoValidHost("No valid host was found. 0/3 hosts are available", diagnosis)
    )
    conductor, sent = _conductor(world, scheduler, network, placement)
    conductor.unshelve_instance(SERVER, "req-unshelve")

    assert sent.messages == []
    assert placement.claims == {}
    row, _ = _row(world)
    assert (row["host"], row["vm_state"], row["task_state"]) == (None, "shelved_offloaded", None)
    cell = world.cells.cell(CELL1_UUID)
    assert cell is not None
    with world.cells.database(cell).read() as conn:
        fault = instances.latest_fault(conn, SERVER)
    assert fault is not None and fault["message"].startswith("Unshelve failed: No valid host")
    assert Diagnosis.from_json(fault["diagnosis"]) == diagnosis  # kept for the admin API
    assert _events(world) == [("conductor_unshelve_instance", "Error")]


def test_the_cell_conductor_moves_a_failed_unshelve_or_gives_up(world: ComputeService) -> None:
    _offloaded(world)
    cell = world.cells.cell(CELL1_UUID)
    assert cell is not None
    with world.cells.database(cell).write() as conn:
        instances.update(conn, SERVER, {"host": "h1", "node": "h1"})
    network, placement, sent = FakeNetwork(), FakePlacement(), Sent()
    placement.claims[SERVER] = {"rp-h1": {}}
    network.bind(PORT, "h1", {})
    conductor = CellConductor(
        cell, world.cells.database(cell), world.api_db, placement, network, sent,  # type: ignore[arg-type]
    )  # fmt: skip
    conductor.unshelve_failed(SERVER, "h1", "spawn failed", [selection("h2")], [])
    assert sent.messages == [
        ("h2", "unshelve_instance", (SERVER, [], [BuildAttempt("h1", "spawn failed")]))
    ]
    assert (list(placement.claims), network.ports[PORT]["binding:host_id"]) == ([SERVER], "h2")

    conductor.unshelve_failed(
        SERVER, "h2", "spawn failed", [], [BuildAttempt("h1", "spawn failed")]
    )
    assert len(sent.messages) == 1
    assert (placement.claims, network.ports[PORT]["binding:host_id"]) == ({}, "")
    row, _ = _row(world)
    assert (row["host"], row["vm_state"], row["task_state"]) == (None, "shelved_offloaded", None)
    with world.cells.database(cell).read() as conn:
        fault = instances.latest_fault(conn, SERVER)
    assert fault is not None
    assert (
        fault["message"]
        == "Unshelve failed on every host tried (2): h1: spawn failed; h2: spawn failed"
    )
    assert _events(world) == [("conductor_unshelve_instance", "Error")]

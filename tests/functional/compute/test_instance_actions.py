"""Instance actions: recorded by the super-conductor, the host agent and the API as a server is
built and deleted (real databases, the fakes of ``test_conductors``), and read through
/servers/{id}/os-instance-actions per microversion and policy."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.compute.cells import Cell
from berth.compute.conductor.build import SuperConductor
from berth.compute.db import build_requests, cells, request_specs
from berth.compute.host.agent import HostAgent, HostResources
from berth.compute.host.driver import FailurePlan, SimulatedDriver
from berth.compute.rpc import NoValidHost
from berth.compute.server_views import host_id
from berth.compute.service import ComputeService
from tests.conftest import MEMBER_ROLES
from tests.functional.compute.conftest import ADMIN, ALICE, CELL1_UUID, client_for, version
from tests.functional.compute.test_conductors import (
    PORT,
    SERVER,
    FakeNetwork,
    FakePlacement,
    FakeScheduler,
    Sent,
    selection,
)
from tests.unit.compute.factories import spec

OWNER = {"x-auth-token": "u:p", "x-roles": MEMBER_ROLES}
ACTIONS = f"/v2.1/servers/{SERVER}/os-instance-actions"


@pytest.fixture
def world(compute_service: ComputeService, cell_db: Database) -> ComputeService:
    with compute_service.api_db.write() as conn:
        cells.create_cell(conn, cells.CELL0_UUID, "cell0", cell_db.url, "none://")
    compute_service.cell_rpc = Sent()  # type: ignore[assignment]
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


def _boot(service: ComputeService, scheduler: FakeScheduler, network: FakeNetwork) -> Sent:
    """What the API stores for a boot (request ``req-boot``), then the super-conductor's step."""
    instance = {
        "uuid": SERVER, "name": "vm", "project_id": "p", "user_id": "u",
        "flavor": {"id": "1", "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1},
        "image": {"id": "img"}, "networks": [{"port": PORT}],
    }  # fmt: skip
    with service.api_db.write() as conn:
        build_requests.create(conn, SERVER, "p", "u", instance)
        request_specs.save(conn, SERVER, spec().to_json())
        cells.create_instance_mapping(conn, SERVER, "p", "u")
    sent = Sent()
    SuperConductor(
        service.api_db,
        service.cells,
        FakePlacement(),
        network,
        scheduler,
        sent,  # type: ignore[arg-type]
    ).build_instances([SERVER], "req-boot")
    return sent


def _agent(service: ComputeService, network: FakeNetwork, fail: bool = False) -> HostAgent:
    cell = service.cells.cell(CELL1_UUID)
    assert isinstance(cell, Cell)
    return HostAgent(
        "h1", HostResources(4, 4096, 40), service.cells.database(cell), FakePlacement(),  # type: ignore[arg-type]
        network, SimulatedDriver("h1", failures=FailurePlan(always=fail)), Sent().conductor(cell),  # type: ignore[arg-type]
    )  # fmt: skip


def _built(service: ComputeService, fail: bool = False) -> None:
    network = FakeNetwork()
    _boot(service, FakeScheduler([[selection("h1")]]), network)
    _agent(service, network, fail).build_and_run_instance(SERVER, [], [])


def _events(client: httpx.Client, request_id: str, minor: int) -> list[dict[str, Any]]:
    answer = client.get(f"{ACTIONS}/{request_id}", headers=version(minor))
    assert answer.status_code == 200, answer.text
    return list(answer.json()["instanceAction"]["events"])


def test_a_boot_records_its_create_action_with_each_steps_event(
    world: ComputeService, owner: httpx.Client, admin: httpx.Client
) -> None:
    _built(world)
    (action,) = owner.get(ACTIONS).json()["instanceActions"]
    assert set(action) == {
        "action", "instance_uuid", "request_id", "user_id", "project_id", "start_time", "message"
    }  # fmt: skip
    assert (action["action"], action["request_id"], action["message"]) == (
        "create", "req-boot", None
    )  # fmt: skip
    assert (action["instance_uuid"], action["user_id"], action["project_id"]) == (SERVER, "u", "p")
    events = _events(admin, "req-boot", 62)
    assert [(e["event"], e["result"], e["host"]) for e in events] == [
        ("conductor_schedule_and_build_instances", "Success", ""),
        ("compute_build_and_run_instance", "Success", "h1"),
    ]
    assert events[1]["hostId"] == host_id("p", "h1") and events[0]["hostId"] == ""
    assert all(e["finish_time"] >= e["start_time"] for e in events)
    assert events[1]["traceback"] is None


def test_a_failed_build_records_an_error_event_with_why_and_an_error_action(
    world: ComputeService, owner: httpx.Client, admin: httpx.Client
) -> None:
    _built(world, fail=True)
    (action,) = owner.get(ACTIONS).json()["instanceActions"]
    assert action["message"] == "Error"
    build = _events(admin, "req-boot", 51)[1]
    assert (build["event"], build["result"]) == ("compute_build_and_run_instance", "Error")
    assert build["traceback"]  # why the spawn failed, to the admin


def test_a_build_no_host_takes_is_a_create_action_in_cell0(
    world: ComputeService, owner: httpx.Client
) -> None:
    _boot(world, FakeScheduler(NoValidHost("No valid host was found.")), FakeNetwork())
    (action,) = owner.get(ACTIONS).json()["instanceActions"]
    assert (action["action"], action["message"]) == ("create", "Error")
    (event,) = _events(owner, "req-boot", 51)
    assert (event["event"], event["result"]) == ("conductor_schedule_and_build_instances", "Error")
    assert "traceback" not in event  # a project's member sees no traceback


def test_a_delete_records_its_action_and_the_hosts_event(
    world: ComputeService, owner: httpx.Client, admin: httpx.Client
) -> None:
    _built(world)
    answer = owner.delete(f"/v2.1/servers/{SERVER}")
    assert answer.status_code == 204
    _agent(world, FakeNetwork()).terminate_instance(SERVER)
    # Before 2.21 a deleted server's actions are not found; from 2.21 they are.
    assert owner.get(ACTIONS, headers=version(20)).status_code == 404
    listed = owner.get(ACTIONS, headers=version(21)).json()["instanceActions"]
    assert [a["action"] for a in listed] == ["delete", "create"]
    events = _events(admin, listed[0]["request_id"], 62)
    assert [(e["event"], e["result"], e["host"]) for e in events] == [
        ("compute_terminate_instance", "Success", "h1")
    ]


@pytest.mark.parametrize(
    ("minor", "with_events", "event_keys"),
    [
        (50, False, None),
        (51, True, {"event", "start_time", "finish_time", "result"}),
        (62, True, {"event", "start_time", "finish_time", "result", "hostId"}),
    ],
)
def test_a_members_view_of_an_action_per_microversion(
    world: ComputeService,
    owner: httpx.Client,
    minor: int,
    with_events: bool,
    event_keys: set[str] | None,
) -> None:
    _built(world)
    answer = owner.get(f"{ACTIONS}/req-boot", headers=version(minor))
    assert answer.status_code == 200
    action = answer.json()["instanceAction"]
    assert ("events" in action) is with_events
    if event_keys is not None:
        assert all(set(e) == event_keys for e in action["events"])


def test_an_admins_view_has_events_at_every_version(
    world: ComputeService, admin: httpx.Client
) -> None:
    _built(world)
    for event in _events(admin, "req-boot", 1):
        assert set(event) == {"event", "start_time", "finish_time", "result", "traceback"}


def test_from_2_58_actions_have_updated_at_and_pages(
    world: ComputeService, owner: httpx.Client
) -> None:
    _built(world)
    owner.delete(f"/v2.1/servers/{SERVER}")
    assert "updated_at" not in owner.get(ACTIONS, headers=version(57)).json()["instanceActions"][0]
    first = owner.get(ACTIONS, params={"limit": 1}, headers=version(58)).json()
    (newest,) = first["instanceActions"]
    assert newest["action"] == "delete" and newest["updated_at"] >= newest["start_time"]
    assert first["links"][0]["rel"] == "next"
    assert f"marker={newest['request_id']}" in first["links"][0]["href"]
    rest = owner.get(
        ACTIONS, params={"limit": 1, "marker": newest["request_id"]}, headers=version(58)
    ).json()
    assert [a["action"] for a in rest["instanceActions"]] == ["create"]
    later = owner.get(
        ACTIONS, params={"changes-since": "2999-01-01T00:00:00Z"}, headers=version(58)
    ).json()
    assert later["instanceActions"] == []
    unknown = owner.get(ACTIONS, params={"marker": "req-none"}, headers=version(58))
    assert unknown.status_code == 400
    assert owner.get(ACTIONS, params={"changes-since": "x"}, headers=version(58)).status_code == 400


def test_another_projects_member_finds_neither_the_actions_nor_the_action(
    world: ComputeService,
) -> None:
    _built(world)
    with client_for(world, ALICE) as alice:
        assert alice.get(ACTIONS).status_code == 404
        assert alice.get(f"{ACTIONS}/req-boot").status_code == 404


def test_an_unknown_request_id_is_not_found(world: ComputeService, owner: httpx.Client) -> None:
    _built(world)
    assert owner.get(f"{ACTIONS}/req-none").status_code == 404


def test_a_server_being_scheduled_has_no_action_yet(
    world: ComputeService, owner: httpx.Client
) -> None:
    with world.api_db.write() as conn:
        build_requests.create(conn, SERVER, "p", "u", {"uuid": SERVER})
        cells.create_instance_mapping(conn, SERVER, "p", "u")
    answer = owner.get(ACTIONS)
    assert answer.status_code == 200 and answer.json()["instanceActions"] == []

"""Ending stuck builds: each server ends in ERROR (or deleted, if its delete had stopped) and gives
back everything it held, once, however many conductors run the recovery at once."""

from __future__ import annotations

import datetime as dt

import pytest

from berth.common.timeutils import utcnow
from berth.compute import stuck
from berth.compute.audit import audit
from berth.compute.conductor.recovery import end_stuck_builds
from berth.compute.db import build_requests, instances
from berth.compute.db import cells as cell_store
from tests.unit.compute_db.racing import race
from tests.unit.stuck_builds.world import (
    HOST,
    LONG_AGO,
    Services,
    assert_nothing_held,
    build_request_exists,
    mapped_cell,
    stuck_build_request,
    stuck_instance,
    vm_state,
)

TEN_MINUTES = dt.timedelta(minutes=10)


def _end(world: Services) -> list[str]:
    return end_stuck_builds(world.api_db, world.cells, world.placement, world.network, TEN_MINUTES)


def _audit_is_clean(world: Services) -> bool:
    return audit(world.cells, world.placement, world.network).clean


def test_a_stuck_build_request_ends_in_cell0_and_gives_everything_back(world: Services) -> None:
    held = stuck_build_request(world)
    lines = _end(world)
    assert len(lines) == 1
    assert lines[0].startswith(f"{held.uuid}: its BuildRequest is in ERROR in cell0")
    assert f"{HOST} (DISK_GB=1, MEMORY_MB=512, VCPU=1)" in lines[0]
    assert f"{held.made_port} (made by compute, bound to {HOST})" in lines[0]
    assert f"{held.user_port} (the user's, bound to {HOST})" in lines[0]
    assert not build_request_exists(world, held.uuid)
    assert mapped_cell(world, held.uuid) == "cell0"
    assert vm_state(world, world.cells.cell0(), held.uuid) == ("error", None, False)
    with world.cells.database(world.cells.cell0()).read() as conn:
        fault = instances.latest_fault(conn, held.uuid)
    assert fault is not None and "nothing happened to it for 10 minutes" in fault["message"]
    assert_nothing_held(world, held)
    assert _audit_is_clean(world)
    assert _end(world) == []


def test_a_stuck_instance_ends_in_error_in_its_cell(world: Services) -> None:
    held = stuck_instance(world)
    lines = _end(world)
    assert len(lines) == 1
    assert lines[0].startswith(f"{held.uuid}: in ERROR in cell1; gave back allocation on {HOST}")
    assert lines[0].endswith("and 1 virtual functions")
    assert vm_state(world, world.cell1, held.uuid) == ("error", None, False)
    with world.cells.database(world.cell1).read() as conn:
        row = instances.get(conn, held.uuid)
    assert row is not None and (row["task_state"], row["network_info"]) == (None, [])
    assert mapped_cell(world, held.uuid) == "cell1"
    assert_nothing_held(world, held)
    assert _audit_is_clean(world)
    assert _end(world) == []


def test_an_instance_whose_delete_stopped_is_deleted(world: Services) -> None:
    held = stuck_instance(world, task_state="deleting")
    (line,) = _end(world)
    assert line.startswith(f"{held.uuid}: deleted in cell1 (its delete had stopped)")
    assert vm_state(world, world.cell1, held.uuid) == ("deleted", HOST, True)
    assert_nothing_held(world, held)


def test_the_conductor_dying_between_instance_and_build_request_is_ended_once(
    world: Services,
) -> None:
    """The Instance was made in cell1, the BuildRequest not yet deleted: one server, one end."""
    held = stuck_instance(world, mapped=False)
    instance = {"uuid": held.uuid, "name": "vm", "flavor": {}, "image": {"id": "img"}}
    with world.api_db.write() as conn:
        build_requests.create(conn, held.uuid, "proj", "user", instance, LONG_AGO)
    (found,) = stuck.find(world.api_db, world.cells, TEN_MINUTES)
    assert found.request is not None and found.cell == world.cell1
    (line,) = _end(world)
    assert line.startswith(f"{held.uuid}: in ERROR in cell1")
    assert not build_request_exists(world, held.uuid)
    assert mapped_cell(world, held.uuid) == "cell1"
    assert vm_state(world, world.cells.cell0(), held.uuid) is None
    assert_nothing_held(world, held)


def test_builds_still_moving_are_left_alone(world: Services) -> None:
    recent = utcnow() - dt.timedelta(minutes=2)
    request, instance = stuck_build_request(world, recent), stuck_instance(world, recent)
    assert _end(world) == []
    assert build_request_exists(world, request.uuid)
    assert vm_state(world, world.cell1, instance.uuid) == ("building", HOST, False)
    assert world.placement.allocations(instance.uuid)["allocations"]
    # The same builds, judged an hour later, are stuck.
    later = end_stuck_builds(
        world.api_db, world.cells, world.placement, world.network, TEN_MINUTES,
        now=utcnow() + dt.timedelta(hours=1),
    )  # fmt: skip
    assert len(later) == 2


def test_a_host_that_finishes_the_build_meanwhile_keeps_its_server(
    world: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = stuck_instance(world)
    found = stuck.find(world.api_db, world.cells, TEN_MINUTES)
    with world.cells.database(world.cell1).write() as conn:
        instances.update(conn, held.uuid, {"vm_state": "active", "task_state": None})
    monkeypatch.setattr(stuck, "find", lambda *_args: found)
    assert _end(world) == []
    assert vm_state(world, world.cell1, held.uuid) == ("active", HOST, False)
    assert world.placement.allocations(held.uuid)["allocations"]
    assert world.network.port(held.made_port)["binding:host_id"] == HOST


def test_a_conductor_that_finishes_the_build_meanwhile_keeps_its_server(
    world: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = stuck_build_request(world)
    found = stuck.find(world.api_db, world.cells, TEN_MINUTES)
    with world.api_db.write() as conn:
        cell_store.set_instance_cell(conn, held.uuid, world.cell1.id)
        build_requests.delete(conn, held.uuid)
    monkeypatch.setattr(stuck, "find", lambda *_args: found)
    assert _end(world) == []
    # The cell0 row made before the race was lost is not left for the server's list to show.
    assert vm_state(world, world.cells.cell0(), held.uuid) == ("deleted", None, True)
    assert mapped_cell(world, held.uuid) == "cell1"
    assert world.placement.allocations(held.uuid)["allocations"]
    assert world.network.port(held.made_port)["device_id"] == held.uuid


def test_a_run_that_died_after_making_the_cell0_row_is_finished(world: Services) -> None:
    held = stuck_build_request(world)
    cell0 = world.cells.cell0()
    with world.cells.database(cell0).write() as conn:
        instances.create(conn, {"uuid": held.uuid, "project_id": "proj", "user_id": "user",
                                "vm_state": "error", "flavor": {}})  # fmt: skip
    (line,) = _end(world)
    assert line.startswith(f"{held.uuid}: its BuildRequest is in ERROR in cell0")
    assert mapped_cell(world, held.uuid) == "cell0"
    assert_nothing_held(world, held)


def test_conductors_recovering_at_once_end_each_server_once(world: Services) -> None:
    held = [stuck_build_request(world) for _ in range(3)] + [
        stuck_instance(world) for _ in range(3)
    ]
    lines = [line for run in race(4, lambda _: _end(world)) for line in run]
    assert sorted(line.split(":")[0] for line in lines) == sorted(h.uuid for h in held)
    for server in held:
        assert_nothing_held(world, server)
    assert _audit_is_clean(world)

"""Instances and their faults in a cell database."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
import sqlalchemy as sa

from berth.common.db import Database
from berth.compute.db import instances
from berth.compute.db.errors import Duplicate
from tests.unit.compute_db.racing import race

FLAVOR = {"flavorid": "1", "vcpus": 1, "memory_mb": 512}


def _values(uuid: str, **overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "uuid": uuid,
        "project_id": "proj",
        "user_id": "user",
        "display_name": "web",
        "vm_state": "building",
        "task_state": "scheduling",
        "flavor": FLAVOR,
    }
    return {**values, **overrides}


def _create(db: Database, uuid: str, **overrides: Any) -> None:
    with db.write() as conn:
        instances.create(conn, _values(uuid, **overrides))


def test_an_instance_is_created_with_its_json_columns(cell_db: Database) -> None:
    born = dt.datetime(2026, 1, 1, 10, 0, 0)
    ports = [{"port_id": "p" * 36, "mac": "fa:16:3e:00:00:01", "created_by_compute": True}]
    with cell_db.write() as conn:
        instances.create(
            conn, _values("a" * 36, created_at=born, network_info=ports, metadata={"k": "v"})
        )
        with pytest.raises(Duplicate):
            instances.create(conn, _values("a" * 36))
    with cell_db.read() as conn:
        made = instances.get(conn, "a" * 36)
    assert made is not None
    assert (made["flavor"], made["network_info"], made["metadata"]) == (FLAVOR, ports, {"k": "v"})
    assert (made["created_at"], made["deleted"], made["power_state"]) == (born, False, 0)
    assert made["host"] is None and made["launched_at"] is None
    with cell_db.read() as conn:
        assert instances.get(conn, "b" * 36) is None


def test_instances_are_listed_with_filters(cell_db: Database) -> None:
    _create(cell_db, "1" * 36, display_name="Web-1", host="h1", vm_state="active")
    _create(cell_db, "2" * 36, display_name="db-1", host="h2", vm_state="active")
    _create(cell_db, "3" * 36, display_name="web_2", project_id="other", vm_state="error")
    _create(cell_db, "4" * 36, display_name="web%", host="h1", vm_state="stopped")
    with cell_db.write() as conn:
        instances.mark_deleted(conn, "4" * 36)
    with cell_db.read() as conn:

        def uuids(**filters: Any) -> list[str]:
            return sorted(i["uuid"][0] for i in instances.list_instances(conn, **filters))

        assert uuids() == ["1", "2", "3"]
        assert uuids(include_deleted=True) == ["1", "2", "3", "4"]
        assert uuids(project_id="proj") == ["1", "2"]
        assert uuids(host="h1") == ["1"]
        assert uuids(vm_state="active") == ["1", "2"]
        assert uuids(vm_state=["active", "error"]) == ["1", "2", "3"]
        assert uuids(name="web") == ["1", "3"]
        assert uuids(name="WEB_") == ["3"]
        assert uuids(name="%", include_deleted=True) == ["4"]
        assert uuids(uuids=["2" * 36, "3" * 36]) == ["2", "3"]
        newest_first = [i["uuid"][0] for i in instances.list_instances(conn)]
        assert newest_first == ["3", "2", "1"]


def test_an_update_with_the_expected_task_state_wins_once(cell_db: Database) -> None:
    _create(cell_db, "a" * 36)
    with cell_db.write() as conn:
        assert instances.update(
            conn,
            "a" * 36,
            {"task_state": "spawning", "host": "h1", "node": "h1.example"},
            expected_task_states=["scheduling"],
        )
        # Another writer still thinks the instance is scheduling: it loses.
        assert not instances.update(
            conn, "a" * 36, {"task_state": "deleting"}, expected_task_states=["scheduling"]
        )
        assert instances.update(
            conn,
            "a" * 36,
            {"vm_state": "active", "task_state": None},
            expected_task_states=["spawning", "rebuild_spawning"],
        )
        # None stands for "no task": only an idle instance starts one.
        assert instances.update(
            conn, "a" * 36, {"task_state": "powering-off"}, expected_task_states=[None]
        )
        assert not instances.update(
            conn, "a" * 36, {"task_state": "rebooting"}, expected_task_states=[None]
        )
        # Without a guard the update simply applies.
        assert instances.update(conn, "a" * 36, {"power_state": 4})
        assert not instances.update(conn, "b" * 36, {"power_state": 4})
        with pytest.raises(ValueError):
            instances.update(conn, "a" * 36, {"deleted": True})
        current = instances.get(conn, "a" * 36)
    assert current is not None
    assert (current["vm_state"], current["task_state"], current["host"]) == (
        "active",
        "powering-off",
        "h1",
    )
    assert (current["power_state"], current["updated_at"] is not None) == (4, True)


def test_updates_under_one_guard_each_set_only_their_own_columns(cell_db: Database) -> None:
    """The statement of a guard is kept and given each update's values: one update's columns
    are not another's, and a column the table lacks is refused as ``values()`` refuses it."""
    _create(cell_db, "a" * 36)
    with cell_db.write() as conn:
        assert instances.update(conn, "a" * 36, {"host": "h2"}, ("scheduling", None))
        assert instances.update(conn, "a" * 36, {"node": "n2"}, [None, "scheduling"])
        assert not instances.update(conn, "a" * 36, {"host": "h3"}, {"spawning"})
        with pytest.raises(sa.exc.CompileError, match="Unconsumed column names: no_such"):
            instances.update(conn, "a" * 36, {"no_such": 1})
        current = instances.get(conn, "a" * 36)
    assert current is not None
    assert (current["host"], current["node"], current["task_state"]) == ("h2", "n2", "scheduling")


def test_instances_are_listed_by_when_their_row_last_changed(cell_db: Database) -> None:
    """The last change is the update when there was one, else the creation."""
    old, new = dt.datetime(2026, 1, 1, 10, 0), dt.datetime(2026, 1, 1, 10, 30)
    _create(cell_db, "o" * 36, created_at=old)
    _create(cell_db, "n" * 36, created_at=new)
    _create(cell_db, "u" * 36, created_at=old)
    with cell_db.write() as conn:
        instances.update(conn, "u" * 36, {"task_state": "spawning"})
        assert [i["uuid"][0] for i in instances.list_instances(conn, changed_before=new)] == ["o"]


def test_changed_since_lists_as_list_instances_does(cell_db: Database) -> None:
    """The poller's statement, built once, finds what ``list_instances`` with
    ``changed_since`` finds: live, shown rows changed at or after the time, newest first."""
    old, new = dt.datetime(2026, 1, 1, 10, 0), dt.datetime(2026, 1, 1, 10, 30)
    _create(cell_db, "o" * 36, created_at=old)
    _create(cell_db, "n" * 36, created_at=new)
    _create(cell_db, "u" * 36, created_at=old)
    _create(cell_db, "x" * 36, created_at=new, project_id="other")
    _create(cell_db, "d" * 36, created_at=new)
    _create(cell_db, "h" * 36, created_at=new, hidden=True)
    with cell_db.write() as conn:
        instances.update(conn, "u" * 36, {"task_state": "spawning"})
        instances.mark_deleted(conn, "d" * 36)
    with cell_db.read() as conn:
        for project in (None, "proj"):
            for since in (old, new, new + dt.timedelta(days=3650)):
                expected = instances.list_instances(conn, project, changed_since=since)
                found = instances.changed_since(conn, since, project)
                assert found == expected
        assert [i["uuid"][0] for i in instances.changed_since(conn, new, "proj")] == ["n", "u"]
        for project in (None, "proj"):
            every = instances.changed_since(conn, old, project)
            for vm_states in ([], ["building"], ["active", "building"], ["deleted"]):
                found = instances.changed_since(conn, old, project, vm_states)
                assert found == [i for i in every if i["vm_state"] in vm_states]
        assert [i["uuid"][0] for i in instances.changed_since(conn, new)] == ["x", "n", "u"]


def test_an_update_may_also_expect_a_vm_state(cell_db: Database) -> None:
    """A build ended as stuck must not turn a server that became ACTIVE meanwhile (with no task,
    as the stuck one may have) into ERROR."""
    _create(cell_db, "a" * 36)
    error = {"vm_state": "error", "task_state": None}
    with cell_db.write() as conn:
        instances.update(conn, "a" * 36, {"vm_state": "active", "task_state": None})
        assert not instances.update(
            conn, "a" * 36, error, expected_task_states=[None], expected_vm_states=["building"]
        )
        assert instances.update(
            conn, "a" * 36, error, expected_task_states=[None], expected_vm_states=["active"]
        )


def test_of_writers_racing_on_the_task_state_exactly_one_wins(cell_db: Database) -> None:
    _create(cell_db, "a" * 36)

    def take(n: int) -> bool:
        return cell_db.write_with_retry(
            lambda conn: instances.update(
                conn, "a" * 36, {"task_state": f"task-{n}"}, expected_task_states=["scheduling"]
            )
        )

    assert sorted(race(5, take)) == [False] * 4 + [True]


def test_the_guard_holds_while_the_winner_has_not_committed(cell_db: Database) -> None:
    """The loser's update waits for the winner's transaction, then sees its task state."""
    _create(cell_db, "a" * 36)
    claimed = threading.Event()
    results: dict[str, bool] = {}

    def winner() -> None:
        with cell_db.write() as conn:
            results["winner"] = instances.update(
                conn, "a" * 36, {"task_state": "spawning"}, expected_task_states=["scheduling"]
            )
            claimed.set()
            threading.Event().wait(0.3)

    def loser() -> None:
        claimed.wait(10)
        with cell_db.write() as conn:
            results["loser"] = instances.update(
                conn, "a" * 36, {"task_state": "deleting"}, expected_task_states=["scheduling"]
            )

    threads = [threading.Thread(target=winner), threading.Thread(target=loser)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {"winner": True, "loser": False}


def test_a_deleted_instance_is_marked_once_and_changes_no_more(cell_db: Database) -> None:
    _create(cell_db, "a" * 36, host="h1", vm_state="active", task_state=None)
    when = dt.datetime(2026, 2, 1)
    with cell_db.write() as conn:
        assert instances.mark_deleted(conn, "a" * 36, when) is True
        assert instances.mark_deleted(conn, "a" * 36) is False
        assert instances.mark_deleted(conn, "b" * 36) is False
        assert not instances.update(conn, "a" * 36, {"vm_state": "active"})
        assert instances.get(conn, "a" * 36, include_deleted=False) is None
        gone = instances.get(conn, "a" * 36)
    assert gone is not None
    assert (gone["deleted"], gone["vm_state"], gone["task_state"]) == (True, "deleted", None)
    assert (gone["terminated_at"], gone["host"]) == (when, "h1")


def test_faults_are_recorded_and_the_latest_shown(cell_db: Database) -> None:
    _create(cell_db, "a" * 36)
    _create(cell_db, "b" * 36)
    with cell_db.write() as conn:
        assert instances.latest_fault(conn, "a" * 36) is None
        instances.add_fault(conn, "a" * 36, 500, "Build failed on h1", "trace", host="h1")
        instances.add_fault(conn, "a" * 36, 500, "No valid host was found. " + "x" * 400)
        instances.add_fault(conn, "b" * 36, 409, "Conflict")
    with cell_db.read() as conn:
        latest = instances.latest_fault(conn, "a" * 36)
        assert latest is not None
        assert latest["message"].startswith("No valid host") and len(latest["message"]) == 255
        assert (latest["code"], latest["host"], latest["details"]) == (500, None, "")
        assert [f["host"] for f in instances.faults(conn, "a" * 36)] == [None, "h1"]
        many = instances.latest_faults(conn, ["a" * 36, "b" * 36, "c" * 36])
    assert {uuid[0]: fault["code"] for uuid, fault in many.items()} == {"a": 500, "b": 409}

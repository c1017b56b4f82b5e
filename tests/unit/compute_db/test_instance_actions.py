"""Instance actions and events in a cell database: the history of each host tried."""

from __future__ import annotations

import datetime as dt

from berth.common.db import Database
from berth.compute import actions as steps
from berth.compute.db import instance_actions as actions

T0 = dt.datetime(2026, 1, 1, 12, 0, 0)


def test_a_rescheduled_build_records_each_host_tried(cell_db: Database) -> None:
    with cell_db.write() as conn:
        create = actions.start_action(conn, "a" * 36, "create", "req-1", "user", "proj", T0)
        actions.add_event(
            conn,
            create,
            "conductor_schedule_and_build_instances",
            result=actions.SUCCESS,
            start_time=T0,
        )
        first = actions.add_event(
            conn,
            create,
            "compute_build_and_run_instance",
            host="h1",
            start_time=T0 + dt.timedelta(seconds=1),
        )
        assert actions.finish_event(conn, first, actions.ERROR, "port binding failed on h1")
        assert not actions.finish_event(conn, first, actions.SUCCESS)
        second = actions.add_event(
            conn,
            create,
            "compute_build_and_run_instance",
            host="h2",
            start_time=T0 + dt.timedelta(seconds=2),
        )
        assert actions.finish_event(conn, second, actions.SUCCESS, now=T0 + dt.timedelta(seconds=5))
        assert actions.finish_action(conn, create, now=T0 + dt.timedelta(seconds=5))
    with cell_db.read() as conn:
        steps = actions.events(conn, create)
        action = actions.get_action(conn, "a" * 36, "req-1")
    assert [(e["event"], e["host"], e["result"], e["details"]) for e in steps] == [
        ("conductor_schedule_and_build_instances", None, "Success", None),
        ("compute_build_and_run_instance", "h1", "Error", "port binding failed on h1"),
        ("compute_build_and_run_instance", "h2", "Success", None),
    ]
    assert steps[0]["finish_time"] == T0
    assert steps[2]["finish_time"] == T0 + dt.timedelta(seconds=5)
    assert action is not None
    assert (action["action"], action["finish_time"], action["message"]) == (
        "create",
        T0 + dt.timedelta(seconds=5),
        None,
    )


def test_actions_are_listed_newest_first_and_events_across_them(cell_db: Database) -> None:
    with cell_db.write() as conn:
        create = actions.start_action(conn, "a" * 36, "create", "req-1", "u", "p", T0)
        actions.add_event(conn, create, "schedule", result=actions.SUCCESS, start_time=T0)
        later = T0 + dt.timedelta(minutes=1)
        stop = actions.start_action(conn, "a" * 36, "stop", "req-2", "u", "p", later)
        actions.add_event(conn, stop, "compute_stop_instance", host="h1", start_time=later)
        actions.finish_action(conn, stop, "Error")
        actions.start_action(conn, "b" * 36, "create", "req-3", "u", "p", T0)
        assert not actions.finish_action(conn, 9999)
    with cell_db.read() as conn:
        listed = actions.list_actions(conn, "a" * 36)
        history = actions.events_of_instance(conn, "a" * 36)
        assert actions.get_action(conn, "a" * 36, "req-3") is None
    assert [a["action"] for a in listed] == ["stop", "create"]
    assert listed[0]["message"] == "Error"
    assert [(e["action"], e["request_id"], e["event"]) for e in history] == [
        ("create", "req-1", "schedule"),
        ("stop", "req-2", "compute_stop_instance"),
    ]
    assert history[1]["finish_time"] is None


def test_a_step_done_under_its_action_is_one_ended_event(cell_db: Database) -> None:
    """``event_done`` (the conductor's, under the action it has just begun) records what
    ``step_done`` does: the step started when it began, ended now, an Error marking the action."""
    with cell_db.write() as conn:
        create = steps.begin(conn, "a" * 36, "create", "req-1", "u", "p", T0)
        steps.event_done(conn, create, "schedule", steps.SUCCESS, start_time=T0)
        failed = steps.begin(conn, "b" * 36, "create", "req-2", "u", "p", T0)
        steps.event_done(conn, failed, "schedule", steps.ERROR, details="no host", start_time=T0)
        steps.begin(conn, "c" * 36, "create", "req-3", "u", "p", T0)
        steps.step_done(conn, "c" * 36, "create", "schedule", steps.SUCCESS, start_time=T0)
    with cell_db.read() as conn:
        done = {
            uuid: (actions.list_actions(conn, uuid)[0], actions.events_of_instance(conn, uuid))
            for uuid in ("a" * 36, "b" * 36, "c" * 36)
        }
    for _, events in done.values():
        (event,) = events
        assert event["start_time"] == T0 and event["finish_time"] > T0
        assert event["event"] == "schedule" and event["host"] is None
    assert [done[u][1][0]["result"] for u in ("a" * 36, "b" * 36, "c" * 36)] == [
        steps.SUCCESS, steps.ERROR, steps.SUCCESS,
    ]  # fmt: skip
    assert done["b" * 36][1][0]["details"] == "no host"
    assert [done[u][0]["message"] for u in ("a" * 36, "b" * 36, "c" * 36)] == [None, "Error", None]

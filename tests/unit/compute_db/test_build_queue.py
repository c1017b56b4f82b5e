"""The build queue in the API database: holding a server, its attempts, whose turn it is."""

from __future__ import annotations

import datetime as dt

from berth.common.db import Database
from berth.compute.db import build_queue

NOW = dt.datetime(2026, 11, 26, 12, 0, 0)
UUID = "a" * 36
DIAGNOSIS = {"v": "1.1", "hosts": 2, "placement_hosts": 0, "available": 0, "stages": []}


def test_a_server_is_held_until_its_deadline_and_counts_its_attempts(api_db: Database) -> None:
    with api_db.write() as conn:
        first = build_queue.hold(conn, UUID, NOW, dt.timedelta(seconds=60), "none", DIAGNOSIS)
        later = NOW + dt.timedelta(seconds=30)
        # Held again (a retry's build lost its race): the deadline stays the first one's.
        again = build_queue.hold(conn, UUID, later, dt.timedelta(seconds=60), "still none", None)
    assert (first["queued_at"], first["expires_at"], first["attempts"]) == (
        NOW, NOW + dt.timedelta(seconds=60), 1,
    )  # fmt: skip
    assert first["diagnosis"] == DIAGNOSIS
    assert (again["expires_at"], again["attempts"], again["message"]) == (
        first["expires_at"], 2, "still none",
    )  # fmt: skip
    with api_db.write() as conn:
        build_queue.tried(conn, UUID, "third", DIAGNOSIS)
    with api_db.read() as conn:
        row = build_queue.get(conn, UUID)
        assert [r["instance_uuid"] for r in build_queue.list_queued(conn)] == [UUID]
    assert row is not None and (row["attempts"], row["message"]) == (3, "third")


def test_one_caller_at_a_time_takes_a_turn_and_a_dead_one_is_taken_over(
    api_db: Database,
) -> None:
    stale = dt.timedelta(minutes=10)
    with api_db.write() as conn:
        build_queue.hold(conn, UUID, NOW, dt.timedelta(hours=1), "none", None)
        assert build_queue.take_turn(conn, UUID, NOW, stale)
        assert not build_queue.take_turn(conn, UUID, NOW + dt.timedelta(minutes=1), stale)
        assert build_queue.take_turn(conn, UUID, NOW + dt.timedelta(minutes=11), stale)
        # A try that found no room ends the turn.
        build_queue.tried(conn, UUID, "none", None)
        assert build_queue.take_turn(conn, UUID, NOW + dt.timedelta(minutes=12), stale)
        assert build_queue.remove(conn, UUID)
        assert not build_queue.remove(conn, UUID)
        assert not build_queue.take_turn(conn, UUID, NOW, stale)

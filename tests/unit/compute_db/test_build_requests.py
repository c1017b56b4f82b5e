"""BuildRequests and RequestSpecs in the API database."""

from __future__ import annotations

import datetime as dt

import pytest

from berth.common.db import Database
from berth.compute.db import build_requests, request_specs
from berth.compute.db.errors import Duplicate
from tests.unit.compute_db.racing import race

SERVER = {"name": "web-1", "flavor": {"id": "1"}, "networks": [{"port": "p" * 36}]}


def test_a_build_request_keeps_the_server_as_requested(api_db: Database) -> None:
    when = dt.datetime(2026, 1, 2, 3, 4, 5)
    with api_db.write() as conn:
        build_requests.create(conn, "a" * 36, "proj", "user", SERVER, created_at=when)
        with pytest.raises(Duplicate):
            build_requests.create(conn, "a" * 36, "proj", "user", SERVER)
    with api_db.read() as conn:
        found = build_requests.get(conn, "a" * 36)
        assert build_requests.get(conn, "b" * 36) is None
        assert build_requests.instance_of(conn, "a" * 36) == SERVER
        assert build_requests.instance_of(conn, "b" * 36) is None
    assert found is not None
    assert found["instance"] == SERVER
    assert (found["project_id"], found["user_id"], found["created_at"]) == ("proj", "user", when)


def test_build_requests_are_listed_by_project(api_db: Database) -> None:
    with api_db.write() as conn:
        for n, project in enumerate(["p1", "p2", "p1"]):
            build_requests.create(conn, f"{n}" * 36, project, "user", SERVER)
    with api_db.read() as conn:
        mine = build_requests.list_build_requests(conn, "p1")
        every = build_requests.list_build_requests(conn)
    assert [b["instance_uuid"] for b in mine] == ["0" * 36, "2" * 36]
    assert len(every) == 3


def test_build_requests_made_before_a_time_are_listed_alone(api_db: Database) -> None:
    old, new = dt.datetime(2026, 1, 1, 10, 0), dt.datetime(2026, 1, 1, 10, 30)
    with api_db.write() as conn:
        build_requests.create(conn, "o" * 36, "proj", "user", SERVER, old)
        build_requests.create(conn, "n" * 36, "proj", "user", SERVER, new)
    with api_db.read() as conn:
        stale = build_requests.list_build_requests(conn, created_before=new)
    assert [b["instance_uuid"] for b in stale] == ["o" * 36]


def test_the_second_delete_of_a_build_request_learns_it_was_gone(api_db: Database) -> None:
    with api_db.write() as conn:
        build_requests.create(conn, "a" * 36, "proj", "user", SERVER)
    with api_db.write() as conn:
        assert build_requests.delete(conn, "a" * 36) is True
    with api_db.write() as conn:
        assert build_requests.delete(conn, "a" * 36) is False


def test_of_two_concurrent_deletes_exactly_one_finds_the_build_request(api_db: Database) -> None:
    """The conductor (it made the instance) and the user (delete) race for the BuildRequest."""
    with api_db.write() as conn:
        build_requests.create(conn, "a" * 36, "proj", "user", SERVER)

    def delete(_: int) -> bool:
        return api_db.write_with_retry(lambda conn: build_requests.delete(conn, "a" * 36))

    assert sorted(race(4, delete)) == [False, False, False, True]


@pytest.mark.parametrize("returning", [True, False])
def test_taking_a_build_request_answers_it_as_deleted_once(
    api_db: Database, monkeypatch: pytest.MonkeyPatch, returning: bool
) -> None:
    """In one statement where the database answers a delete with its row, else read and
    deleted: the same answer, the latest update included."""
    monkeypatch.setattr(api_db.engine.dialect, "delete_returning", returning)
    with api_db.write() as conn:
        build_requests.create(conn, "a" * 36, "proj", "user", SERVER)
        build_requests.update_instance(conn, "a" * 36, {"name": "renamed"})
    with api_db.write() as conn:
        taken = build_requests.take(conn, "a" * 36)
        assert build_requests.take(conn, "a" * 36) is None
    assert taken is not None
    assert taken["instance"] == {**SERVER, "name": "renamed"}
    assert (taken["instance_uuid"], taken["project_id"], taken["user_id"]) == (
        "a" * 36,
        "proj",
        "user",
    )
    with api_db.read() as conn:
        assert build_requests.get(conn, "a" * 36) is None


def test_a_request_spec_is_saved_replaced_read_and_deleted(api_db: Database) -> None:
    spec = {"flavor": {"vcpus": 2}, "ports": [{"id": "p1", "resource_request": {}}]}
    with api_db.write() as conn:
        assert request_specs.save(conn, "a" * 36, spec) is True
    with api_db.read() as conn:
        assert request_specs.get(conn, "a" * 36) == spec
        assert request_specs.get(conn, "b" * 36) is None
    moved = {**spec, "requested_destination": {"host": "h2"}}
    with api_db.write() as conn:
        assert request_specs.save(conn, "a" * 36, moved) is False
    with api_db.read() as conn:
        assert request_specs.get(conn, "a" * 36) == moved
    with api_db.write() as conn:
        assert request_specs.delete(conn, "a" * 36) is True
        assert request_specs.delete(conn, "a" * 36) is False


def test_a_new_servers_request_spec_is_created_once(api_db: Database) -> None:
    """``create`` (a new server's spec, one insert) refuses a second spec of the server and
    leaves the first, which ``save`` then replaces."""
    spec = {"flavor": {"vcpus": 2}}
    with api_db.write() as conn:
        request_specs.create(conn, "a" * 36, spec)
    with pytest.raises(Duplicate), api_db.write() as conn:
        request_specs.create(conn, "a" * 36, {"flavor": {"vcpus": 4}})
    with api_db.read() as conn:
        assert request_specs.get(conn, "a" * 36) == spec
    with api_db.write() as conn:
        assert request_specs.save(conn, "a" * 36, {"flavor": {"vcpus": 8}}) is False
    with api_db.read() as conn:
        assert request_specs.get(conn, "a" * 36) == {"flavor": {"vcpus": 8}}

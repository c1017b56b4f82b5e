"""Server groups and their members in the API database."""

from __future__ import annotations

import pytest

from berth.common.db import Database
from berth.compute.db import server_groups
from berth.compute.db.errors import Duplicate
from tests.unit.compute_db.racing import race

GROUP = "g" * 36


def _group(db: Database, uuid: str = GROUP, project_id: str = "proj") -> None:
    with db.write() as conn:
        server_groups.create(
            conn, uuid, "web", project_id, "user", "anti-affinity", {"max_server_per_host": 2}
        )


def test_a_group_is_created_read_listed_and_deleted(api_db: Database) -> None:
    _group(api_db)
    _group(api_db, "h" * 36, project_id="other")
    with api_db.write() as conn:
        with pytest.raises(Duplicate):
            server_groups.create(conn, GROUP, "again", "proj", "user", "affinity")
        group = server_groups.get(conn, GROUP)
        assert group is not None
        assert (group["policy"], group["rules"]) == ("anti-affinity", {"max_server_per_host": 2})
        assert [g["uuid"] for g in server_groups.list_groups(conn, "proj")] == [GROUP]
        assert len(server_groups.list_groups(conn)) == 2
        server_groups.add_members(conn, GROUP, ["a" * 36])
        assert server_groups.delete(conn, GROUP) is True
        assert server_groups.delete(conn, GROUP) is False
        assert server_groups.members(conn, GROUP) == []
        assert server_groups.group_of(conn, "a" * 36) is None


def test_adding_members_is_idempotent(api_db: Database) -> None:
    _group(api_db)
    a, b, c = "a" * 36, "b" * 36, "c" * 36
    with api_db.write() as conn:
        assert server_groups.add_members(conn, GROUP, [a, b]) is True
        assert server_groups.add_members(conn, GROUP, [b, c, c]) is True
        assert server_groups.add_members(conn, "x" * 36, [a]) is False
        assert server_groups.members(conn, GROUP) == [a, b, c]
        group = server_groups.group_of(conn, b)
        assert group is not None and group["uuid"] == GROUP
        assert server_groups.remove_members(conn, GROUP, [a, "z" * 36]) == 1
        assert server_groups.remove_instance(conn, c) == 1
        assert server_groups.members(conn, GROUP) == [b]


def test_concurrent_adds_of_one_member_keep_one_row(api_db: Database) -> None:
    _group(api_db)

    def add(_: int) -> bool:
        return api_db.write_with_retry(
            lambda conn: server_groups.add_members(conn, GROUP, ["a" * 36])
        )

    assert race(4, add) == [True] * 4
    with api_db.read() as conn:
        assert server_groups.members(conn, GROUP) == ["a" * 36]

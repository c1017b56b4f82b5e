"""Admitting the servers of a group to hosts under the group's lock: the policy holds however
many conductors admit members at once, on every database."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import sqlalchemy as sa

from berth.common.db import Database
from berth.compute.db import group_placements, server_groups
from berth.compute.db.api_schema import server_group_placements
from tests.unit.compute_db.racing import race

GROUP = "g" * 36
OTHER_GROUP = "o" * 36


def _group(
    db: Database,
    policy: str,
    members: list[str],
    rules: Mapping[str, Any] | None = None,
    uuid: str = GROUP,
) -> None:
    with db.write() as conn:
        server_groups.create(conn, uuid, "web", "proj", "user", policy, rules)
        server_groups.add_members(conn, uuid, members)


def _recorded(db: Database) -> dict[str, str]:
    p = server_group_placements.c
    with db.read() as conn:
        return {uuid: host for uuid, host in conn.execute(sa.select(p.instance_uuid, p.host))}


def _reserve(db: Database, instance_uuid: str, host: str) -> bool:
    with db.write() as conn:
        return group_placements.reserve(conn, instance_uuid, host)


def _servers(count: int) -> list[str]:
    return [f"{n:036d}" for n in range(count)]


def test_anti_affinity_admits_one_server_per_host(api_db: Database) -> None:
    a, b = _servers(2)
    _group(api_db, "anti-affinity", [a, b])
    assert _reserve(api_db, a, "h1") is True
    assert _reserve(api_db, b, "h1") is False
    assert _reserve(api_db, b, "h2") is True
    assert _reserve(api_db, a, "h1") is True  # again: nothing changes
    assert _recorded(api_db) == {a: "h1", b: "h2"}


def test_max_server_per_host_admits_that_many(api_db: Database) -> None:
    a, b, c = _servers(3)
    _group(api_db, "anti-affinity", [a, b, c], {"max_server_per_host": 2})
    assert [_reserve(api_db, s, "h1") for s in (a, b, c)] == [True, True, False]
    assert _recorded(api_db) == {a: "h1", b: "h1"}


def test_affinity_admits_only_the_first_members_host(api_db: Database) -> None:
    a, b = _servers(2)
    _group(api_db, "affinity", [a, b])
    assert _reserve(api_db, a, "h1") is True
    assert _reserve(api_db, b, "h2") is False
    assert _reserve(api_db, b, "h1") is True
    # a reschedule of a away from b is refused, and a stays recorded where it was
    assert _reserve(api_db, a, "h2") is False
    assert _recorded(api_db) == {a: "h1", b: "h1"}


@pytest.mark.parametrize("policy", ["soft-affinity", "soft-anti-affinity"])
def test_soft_policies_admit_anywhere_and_still_record(api_db: Database, policy: str) -> None:
    a, b, c = _servers(3)
    _group(api_db, policy, [a, b, c])
    assert [_reserve(api_db, s, h) for s, h in ((a, "h1"), (b, "h1"), (c, "h2"))] == [True] * 3
    assert _recorded(api_db) == {a: "h1", b: "h1", c: "h2"}


def test_a_reschedule_moves_the_record_and_frees_the_old_host(api_db: Database) -> None:
    a, b = _servers(2)
    _group(api_db, "anti-affinity", [a, b])
    assert _reserve(api_db, a, "h1") is True
    assert _reserve(api_db, a, "h2") is True
    assert _reserve(api_db, b, "h1") is True
    assert _recorded(api_db) == {a: "h2", b: "h1"}


def test_servers_outside_any_group_are_admitted_and_not_recorded(api_db: Database) -> None:
    a, stranger = _servers(2)
    _group(api_db, "anti-affinity", [a])
    assert _reserve(api_db, a, "h1") is True
    assert _reserve(api_db, stranger, "h1") is True
    assert group_placements.admit(api_db, stranger, "h1") is True
    assert _recorded(api_db) == {a: "h1"}


def test_leaving_the_group_or_its_deletion_forgets_the_host(api_db: Database) -> None:
    a, b, c, d = _servers(4)
    _group(api_db, "anti-affinity", [a, b])
    _group(api_db, "anti-affinity", [c, d], uuid=OTHER_GROUP)
    for server, host in ((a, "h1"), (b, "h2"), (c, "h1"), (d, "h2")):
        assert _reserve(api_db, server, host) is True
    with api_db.write() as conn:
        assert server_groups.remove_instance(conn, a) == 1
        # d is not in GROUP: its record stays
        assert server_groups.remove_members(conn, GROUP, [b, d]) == 1
        assert group_placements.release(conn, a) is False
    assert _recorded(api_db) == {c: "h1", d: "h2"}
    with api_db.write() as conn:
        assert group_placements.release(conn, c) is True
        server_groups.delete(conn, OTHER_GROUP)
    assert _recorded(api_db) == {}


def test_an_unknown_policy_is_refused_loudly(api_db: Database) -> None:
    (a,) = _servers(1)
    _group(api_db, "spread-evenly", [a])
    with pytest.raises(ValueError, match="spread-evenly"):
        _reserve(api_db, a, "h1")


@pytest.mark.parametrize("max_per_host", [1, 2])
def test_concurrent_members_on_one_host_respect_anti_affinity(
    api_db: Database, max_per_host: int
) -> None:
    servers = _servers(8)
    _group(api_db, "anti-affinity", servers, {"max_server_per_host": max_per_host})
    admitted = race(len(servers), lambda n: group_placements.admit(api_db, servers[n], "h1"))
    assert admitted.count(True) == max_per_host
    assert len(_recorded(api_db)) == max_per_host


def test_concurrent_members_on_two_hosts_respect_affinity(api_db: Database) -> None:
    servers = _servers(6)
    _group(api_db, "affinity", servers)
    hosts = ["h1", "h2"] * 3
    admitted = race(len(servers), lambda n: group_placements.admit(api_db, servers[n], hosts[n]))
    winners = {hosts[n] for n, ok in enumerate(admitted) if ok}
    assert len(winners) == 1
    assert set(_recorded(api_db).values()) == winners


def test_a_server_deleted_while_it_is_admitted_leaves_no_record(api_db: Database) -> None:
    servers = _servers(6)
    _group(api_db, "soft-anti-affinity", servers)

    def work(n: int) -> object:
        server = servers[n // 2]
        if n % 2:
            return api_db.write_with_retry(lambda c: server_groups.remove_instance(c, server))
        return group_placements.admit(api_db, server, "h1")

    race(2 * len(servers), work)
    assert _recorded(api_db) == {}

"""Which host each server of a server group was admitted to, decided where it cannot race.

The scheduler filters hosts by where a group's members are when it starts, so builds of one
anti-affinity group from separate requests, scheduled at the same moment, each see the others
nowhere and may all pick one host. Before a conductor keeps a host for a server it calls
:func:`reserve`, which in one API database transaction locks the group's row (so the members of
one group are admitted one at a time, on every database), counts the members recorded on that
host or elsewhere, and records the server there only if the group's policy still holds. The
conductor that gets False tries its next alternate.

Servers that are not recorded here do not count: the members placed before this record existed
(the scheduler's filters still see them) and those whose build ended without a host.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.compute.db._tables import locked
from berth.compute.db.api_schema import server_group_members, server_group_placements, server_groups

# The reason a conductor gives for a host it could not keep (a fixed string, so reasons count).
REFUSED = "its server group's policy does not admit it on this host"

_SOFT = frozenset({"soft-affinity", "soft-anti-affinity"})


def reserve(conn: Connection, instance_uuid: str, host: str) -> bool:
    """Record the server on ``host`` if its group's policy allows it; False when it does not.

    Run it in a write transaction. True, and nothing recorded, for a server in no group (or whose
    group is gone). Idempotent: the same host again is True; another host moves the record (a
    reschedule) if the policy allows, else the record stays where it was."""
    group_id = _group_of(conn, instance_uuid)
    if group_id is None:
        return True
    query = sa.select(server_groups.c.policy, server_groups.c.rules)
    group = conn.execute(locked(conn, query.where(server_groups.c.id == group_id))).first()
    # Leaving the group takes the same lock (``release``), so this answer is final.
    if group is None or _group_of(conn, instance_uuid) != group_id:
        return True
    if not _allows(group.policy, group.rules, _others_by_host(conn, group_id, instance_uuid), host):
        return False
    _record(conn, group_id, instance_uuid, host)
    return True


def admit(api_db: Database, instance_uuid: str, host: str) -> bool:
    """:func:`reserve` in a write transaction of its own (retried on a deadlock); a server in no
    group is admitted after one read, without taking a write lock."""
    with api_db.read() as conn:
        if _group_of(conn, instance_uuid) is None:
            return True
    return api_db.write_with_retry(lambda conn: reserve(conn, instance_uuid, host))


def release(conn: Connection, instance_uuid: str) -> bool:
    """Forget where the server was admitted (it leaves its group, is deleted, or its build ended
    without a host); False when it was not recorded.

    It takes the group's lock first, as :func:`reserve` does, so a server that leaves its group
    while a conductor admits it is either recorded and forgotten here, or never recorded. Call it
    before the membership goes (``server_groups.remove_instance`` does)."""
    group_id = _group_of(conn, instance_uuid)
    if group_id is not None:
        lock = sa.select(server_groups.c.id).where(server_groups.c.id == group_id)
        conn.execute(locked(conn, lock)).first()
    result = conn.execute(
        server_group_placements.delete().where(
            server_group_placements.c.instance_uuid == instance_uuid
        )
    )
    return result.rowcount > 0


def _group_of(conn: Connection, instance_uuid: str) -> int | None:
    query = sa.select(server_group_members.c.group_id).where(
        server_group_members.c.instance_uuid == instance_uuid
    )
    return conn.execute(query.order_by(server_group_members.c.group_id)).scalar()


def _others_by_host(conn: Connection, group_id: int, instance_uuid: str) -> dict[str, int]:
    """How many of the group's other servers are recorded on each host."""
    p = server_group_placements.c
    query = (
        sa.select(p.host, sa.func.count())
        .where(p.group_id == group_id, p.instance_uuid != instance_uuid)
        .group_by(p.host)
    )
    return {row_host: int(count) for row_host, count in conn.execute(query)}


def _allows(policy: str, rules: Mapping[str, Any], others: Mapping[str, int], host: str) -> bool:
    if policy == "anti-affinity":
        return others.get(host, 0) < int(rules.get("max_server_per_host", 1))
    if policy == "affinity":
        return set(others) <= {host}
    if policy in _SOFT:
        # Only preferences: the weighers' business. Recorded all the same, so that the record
        # stays complete whatever the group's policy.
        return True
    raise ValueError(f"unknown server group policy {policy!r}")


def _record(conn: Connection, group_id: int, instance_uuid: str, host: str) -> None:
    p = server_group_placements.c
    current = conn.execute(
        sa.select(p.group_id, p.host).where(p.instance_uuid == instance_uuid)
    ).first()
    if current is None:
        conn.execute(
            server_group_placements.insert().values(
                group_id=group_id, instance_uuid=instance_uuid, host=host
            )
        )
    elif (current.group_id, current.host) != (group_id, host):
        conn.execute(
            server_group_placements.update()
            .where(p.instance_uuid == instance_uuid)
            .values(group_id=group_id, host=host)
        )

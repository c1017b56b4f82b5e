"""Projects' quota limits, the counts checked against them, and the per-project lock rows."""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct, lock_rows
from berth.common.db import Database
from berth.network.store.schema import (
    floatingips,
    network_quota_locks,
    network_quotas,
    networks,
    ports,
    rbac_policies,
    routers,
    security_group_rules,
    security_groups,
    subnets,
)

# What each quota resource counts.
_COUNTED = {
    "network": networks,
    "subnet": subnets,
    "port": ports,
    "rbac_policy": rbac_policies,
    "security_group": security_groups,
    "security_group_rule": security_group_rules,
    "router": routers,
    "floatingip": floatingips,
}


def limits_of(conn: Connection, project_id: str) -> dict[str, int]:
    """The limits set for the project, by resource (those not set are absent)."""
    q = network_quotas.c
    query = sa.select(q.resource, q.hard_limit).where(q.project_id == project_id)
    return {resource: int(limit) for resource, limit in conn.execute(query)}


def all_limits(conn: Connection) -> dict[str, dict[str, int]]:
    """Every project's limits that were set, by project."""
    q = network_quotas.c
    found: dict[str, dict[str, int]] = {}
    for project_id, resource, limit in conn.execute(
        sa.select(q.project_id, q.resource, q.hard_limit).order_by(q.project_id)
    ):
        found.setdefault(project_id, {})[resource] = int(limit)
    return found


def set_limits(conn: Connection, project_id: str, limits: Mapping[str, int]) -> None:
    q = network_quotas.c
    for resource, limit in limits.items():
        where = (q.project_id == project_id, q.resource == resource)
        if conn.execute(network_quotas.update().where(*where).values(hard_limit=limit)).rowcount:
            continue
        try:
            with conn.begin_nested():
                conn.execute(
                    network_quotas.insert().values(
                        project_id=project_id, resource=resource, hard_limit=limit
                    )
                )
        except sa.exc.IntegrityError:
            # Another writer set it between our two statements: ours is the later word.
            conn.execute(network_quotas.update().where(*where).values(hard_limit=limit))


def delete_limits(conn: Connection, project_id: str) -> None:
    conn.execute(network_quotas.delete().where(network_quotas.c.project_id == project_id))


def count(conn: Connection, project_id: str, resource: str) -> int:
    """How many of the resource the project owns."""
    table = _COUNTED[resource]
    query = sa.select(sa.func.count()).where(table.c.project_id == project_id)
    return int(conn.execute(query).scalar_one())


def _limit_and_count(table: sa.Table) -> sa.Select[tuple[int | None, int]]:
    q = network_quotas.c
    project = sa.bindparam("project_id")
    limit = sa.select(q.hard_limit).where(q.project_id == project, q.resource == sa.bindparam("r"))
    used = sa.select(sa.func.count()).select_from(table).where(table.c.project_id == project)
    return sa.select(limit.scalar_subquery(), used.scalar_subquery())


# Built once per resource, run on the driver's cursor: every create runs one under its write
# lock.
_LIMIT_AND_COUNT = {resource: _limit_and_count(table) for resource, table in _COUNTED.items()}


def limit_and_count(conn: Connection, project_id: str, resource: str) -> tuple[int | None, int]:
    """The limit set for the project on the resource (None: not set) and how many of it the
    project owns, in one statement (a create's check runs it under its write lock)."""
    query = _LIMIT_AND_COUNT[resource]
    ((own, count),) = direct.execute(conn, query, {"project_id": project_id, "r": resource}).rows
    return (None if own is None else int(own)), int(count)


def prepare(db: Database, project_id: str) -> None:
    """Make the project's lock row ahead of the transaction that holds it (see lock_rows)."""
    lock_rows.ensure(db, network_quota_locks, {"project_id": project_id})


def hold(conn: Connection, project_id: str) -> None:
    """Serialise this transaction with every other quota-counted create of the project."""
    lock_rows.hold(conn, network_quota_locks, {"project_id": project_id})

"""Quota limits and what counts against them, in the compute databases.

Limits live in the API database: a project's own (``quotas``), its users' own
(``project_user_quotas``) and quota classes' (only the ``default`` class is read). What a project uses is counted, never stored (upstream's way since
it dropped its usage table): its servers from the BuildRequests here and the Instances in each
cell, its server groups and their members here, a user's key pairs here.

The counts are only as good as the lock taken before them: :func:`hold_project` and
:func:`hold_user` (``berth.common.lock_rows``) in the transaction that then adds what it counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct, lock_rows
from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.db._tables import locked
from berth.compute.db.api_schema import (
    build_requests,
    key_pairs,
    project_user_quotas,
    quota_classes,
    quota_locks,
    quotas,
    server_group_members,
    server_groups,
)
from berth.compute.db.cell_schema import instances
from berth.compute.db.instances import SOFT_DELETED

# A soft-deleted server being restored (``berth.compute.soft_delete``).
RESTORING = "restoring"
_PROJECT = "project"
_USER = "user"


@dataclass(frozen=True)
class ServerSize:
    """What one server counts for: one instance, its flavor's VCPUs and memory (MiB)."""

    vcpus: int
    memory_mb: int


# -- limits ----------------------------------------------------------------------------------


def project_limits(conn: Connection, project_id: str) -> dict[str, int]:
    """The limits set for the project, by resource (those not set are absent)."""
    query = sa.select(quotas.c.resource, quotas.c.hard_limit).where(
        quotas.c.project_id == project_id
    )
    return {resource: int(limit) for resource, limit in conn.execute(query)}


def class_limits(conn: Connection, class_name: str) -> dict[str, int]:
    query = sa.select(quota_classes.c.resource, quota_classes.c.hard_limit).where(
        quota_classes.c.class_name == class_name
    )
    return {resource: int(limit) for resource, limit in conn.execute(query)}


# A quota class's limits, a project's and one of its users', in one statement: a create reads
# all three while it holds the project's lock (a statement less to run, twice, under it).
_SCOPED_LIMITS = sa.union_all(
    sa.select(
        sa.literal_column("'class'").label("scope"),
        quota_classes.c.resource,
        quota_classes.c.hard_limit,
    ).where(quota_classes.c.class_name == sa.bindparam("class_name")),
    sa.select(sa.literal_column("'project'"), quotas.c.resource, quotas.c.hard_limit).where(
        quotas.c.project_id == sa.bindparam("project_id")
    ),
    sa.select(
        sa.literal_column("'user'"),
        project_user_quotas.c.resource,
        project_user_quotas.c.hard_limit,
    ).where(
        project_user_quotas.c.project_id == sa.bindparam("project_id"),
        project_user_quotas.c.user_id == sa.bindparam("user_id"),
    ),
)


@dataclass(frozen=True)
class ScopedLimits:
    """The limits set for a quota class, a project and one of its users (those not set are
    absent), as :func:`class_limits`, :func:`project_limits` and :func:`user_limits` read them."""

    of_class: dict[str, int]
    of_project: dict[str, int]
    of_user: dict[str, int]


def scoped_limits(conn: Connection, class_name: str, project_id: str, user_id: str) -> ScopedLimits:
    found: dict[str, dict[str, int]] = {"class": {}, "project": {}, "user": {}}
    params = {"class_name": class_name, "project_id": project_id, "user_id": user_id}
    for scope, resource, limit in direct.execute(conn, _SCOPED_LIMITS, params).rows:
        found[scope][resource] = int(limit)
    return ScopedLimits(found["class"], found["project"], found["user"])


def user_limits(conn: Connection, project_id: str, user_id: str) -> dict[str, int]:
    """The limits set for one user of the project, by resource (those not set are absent)."""
    table = project_user_quotas
    query = sa.select(table.c.resource, table.c.hard_limit).where(
        table.c.project_id == project_id, table.c.user_id == user_id
    )
    return {resource: int(limit) for resource, limit in conn.execute(query)}


def users_limits(
    conn: Connection, project_id: str, except_user: str | None = None
) -> dict[str, int]:
    """Per resource, the sum of the limits the project's users (but ``except_user``) have of
    their own, unlimited ones left out."""
    table = project_user_quotas
    query = (
        sa.select(table.c.resource, sa.func.sum(table.c.hard_limit))
        .where(table.c.project_id == project_id, table.c.hard_limit >= 0)
        .group_by(table.c.resource)
    )
    if except_user is not None:
        query = query.where(table.c.user_id != except_user)
    return {resource: int(total) for resource, total in conn.execute(query)}


def set_user_limits(
    conn: Connection, project_id: str, user_id: str, limits: Mapping[str, int]
) -> None:
    table = project_user_quotas
    for resource, limit in limits.items():
        where = (
            table.c.project_id == project_id,
            table.c.user_id == user_id,
            table.c.resource == resource,
        )
        values = {"project_id": project_id, "user_id": user_id, "resource": resource}
        _write(conn, table, where, values, limit)


def delete_user_limits(conn: Connection, project_id: str, user_id: str | None = None) -> int:
    """Forget one user's limits in the project (every user's when ``user_id`` is None)."""
    table = project_user_quotas
    query = table.delete().where(table.c.project_id == project_id)
    if user_id is not None:
        query = query.where(table.c.user_id == user_id)
    return conn.execute(query).rowcount


def set_project_limits(conn: Connection, project_id: str, limits: Mapping[str, int]) -> None:
    for resource, limit in limits.items():
        _upsert(conn, quotas, quotas.c.project_id, project_id, resource, limit)


def set_class_limits(conn: Connection, class_name: str, limits: Mapping[str, int]) -> None:
    for resource, limit in limits.items():
        _upsert(conn, quota_classes, quota_classes.c.class_name, class_name, resource, limit)


def delete_project_limits(conn: Connection, project_id: str) -> int:
    """Forget the project's limits (it takes the defaults again); how many there were."""
    return conn.execute(quotas.delete().where(quotas.c.project_id == project_id)).rowcount


def _upsert(
    conn: Connection,
    table: sa.Table,
    owner: sa.Column[str],
    owner_id: str,
    resource: str,
    limit: int,
) -> None:
    where = (owner == owner_id, table.c.resource == resource)
    _write(conn, table, where, {owner.name: owner_id, "resource": resource}, limit)


def _write(
    conn: Connection,
    table: sa.Table,
    where: tuple[sa.ColumnElement[bool], ...],
    key: Mapping[str, str],
    limit: int,
) -> None:
    """Set the limit of the row ``where`` finds, or insert it with ``key``'s columns."""
    changed = conn.execute(
        table.update().where(*where).values(hard_limit=limit, updated_at=utcnow())
    )
    if changed.rowcount:
        return
    try:
        with conn.begin_nested():
            conn.execute(table.insert().values({**key, "hard_limit": limit}))
    except sa.exc.IntegrityError:
        # Another writer set it between our two statements: ours is the later word.
        conn.execute(table.update().where(*where).values(hard_limit=limit, updated_at=utcnow()))


# -- the locks counting decisions are taken under ----------------------------------------------


def prepare_project(db: Database, project_id: str) -> None:
    """Make the project's lock row ahead of the transaction that holds it (see lock_rows)."""
    lock_rows.ensure(db, quota_locks, {"kind": _PROJECT, "owner": project_id})


def hold_project(conn: Connection, project_id: str) -> None:
    """Serialise this transaction with every other quota-counted write of the project."""
    lock_rows.hold(conn, quota_locks, {"kind": _PROJECT, "owner": project_id})


def prepare_user(db: Database, user_id: str) -> None:
    lock_rows.ensure(db, quota_locks, {"kind": _USER, "owner": user_id})


def hold_user(conn: Connection, user_id: str) -> None:
    """Serialise this transaction with every other key pair create of the user."""
    lock_rows.hold(conn, quota_locks, {"kind": _USER, "owner": user_id})


# -- counting --------------------------------------------------------------------------------


def building_servers(
    conn: Connection, project_id: str, user_id: str | None = None
) -> dict[str, ServerSize]:
    """The project's servers (its user's, given one) that are still BuildRequests (API
    database), by uuid."""
    query = sa.select(build_requests.c.instance_uuid, build_requests.c.instance).where(
        build_requests.c.project_id == project_id
    )
    if user_id is not None:
        query = query.where(build_requests.c.user_id == user_id)
    return {uuid: _size(instance["flavor"]) for uuid, instance in conn.execute(query)}


def cell_servers(
    conn: Connection, project_id: str, user_id: str | None = None
) -> dict[str, ServerSize]:
    """The project's (its user's) live Instances in one cell database, by uuid: neither deleted
    nor soft-deleted (as upstream counts; one being restored counts again)."""
    query = sa.select(instances.c.uuid, instances.c.flavor).where(
        instances.c.project_id == project_id,
        instances.c.deleted == sa.false(),
        sa.or_(instances.c.vm_state != SOFT_DELETED, instances.c.task_state == RESTORING),
    )
    if user_id is not None:
        query = query.where(instances.c.user_id == user_id)
    return {uuid: _size(flavor) for uuid, flavor in conn.execute(query)}


def _size(flavor: Mapping[str, Any]) -> ServerSize:
    return ServerSize(vcpus=int(flavor["vcpus"]), memory_mb=int(flavor["memory_mb"]))


def count_server_groups(conn: Connection, project_id: str, user_id: str | None = None) -> int:
    query = sa.select(sa.func.count()).where(server_groups.c.project_id == project_id)
    if user_id is not None:
        query = query.where(server_groups.c.user_id == user_id)
    return int(conn.execute(query).scalar_one())


def hold_group_and_count_members(conn: Connection, group_uuid: str) -> int | None:
    """Lock the group's row (as group admissions do) and count its members; None when the group
    is gone. Members join only under this lock, so the count holds until the commit."""
    group = conn.execute(
        locked(conn, sa.select(server_groups.c.id).where(server_groups.c.uuid == group_uuid))
    ).scalar()
    if group is None:
        return None
    query = sa.select(sa.func.count()).where(server_group_members.c.group_id == group)
    return int(conn.execute(query).scalar_one())


def count_key_pairs(conn: Connection, user_id: str) -> int:
    query = sa.select(sa.func.count()).where(key_pairs.c.user_id == user_id)
    return int(conn.execute(query).scalar_one())

"""Instances and their faults in a cell database.

Several writers change an instance: the conductors, its host agent, the API (a delete). Each
change that starts or ends a task says which task state it expects to find
(``expected_task_states``); the update matches the row only in that state, in one statement,
so of two writers racing, the second finds zero rows and learns it lost (nova's
"expected_task_state" guard). A deleted instance is kept, with ``deleted`` set, and changes no
more.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.compute.db import host_changes
from berth.compute.db._tables import first_of, locked, try_insert
from berth.compute.db.cell_schema import instance_faults, instances
from berth.compute.db.errors import Duplicate

# Columns only :func:`create` and :func:`mark_deleted` set.
_FIXED = frozenset({"id", "uuid", "deleted"})
# What a copy in another cell does not take over: its own row id.
_NOT_COPIED = frozenset({"id"})
_FAULT_MESSAGE_LENGTH = 255


# A soft-deleted server's vm_state (``berth.compute.soft_delete``): powered off, restorable.
SOFT_DELETED = "soft-delete"


# Built once (see try_insert); its columns are those of each row given.
_INSERT = instances.insert()


def create(conn: Connection, values: Mapping[str, Any]) -> None:
    """Add an instance (``uuid``, ``project_id``, ``user_id``, ``vm_state`` and ``flavor`` at
    least; ``created_at`` may carry over from its BuildRequest). :class:`Duplicate` when the
    uuid exists: a build delivered twice finds the instance its first delivery made."""
    row = {"metadata": {}, "tags": [], "network_info": [], **values, "deleted": False}
    if not try_insert(conn, _INSERT, row, on_cursor=True):
        raise Duplicate("instance", values["uuid"])


# Built once: every build and every show reads its instance.
_GET = sa.select(instances).where(instances.c.uuid == sa.bindparam("uuid"))
_GET_LIVE = _GET.where(instances.c.deleted == sa.false())


def get(conn: Connection, uuid: str, include_deleted: bool = True) -> Mapping[str, Any] | None:
    return first_of(conn, _GET if include_deleted else _GET_LIVE, {"uuid": uuid})


def hold(conn: Connection, uuid: str) -> RowMapping | None:
    """The live instance, locked until the transaction ends where the database has row locks:
    for a change computed from what the row holds now (its metadata, its tags)."""
    query = sa.select(instances).where(instances.c.uuid == uuid, instances.c.deleted == sa.false())
    return conn.execute(locked(conn, query)).mappings().first()


def list_instances(
    conn: Connection,
    project_id: str | None = None,
    host: str | None = None,
    vm_state: str | Collection[str] | None = None,
    name: str | None = None,
    uuids: Collection[str] | None = None,
    include_deleted: bool = False,
    changed_before: dt.datetime | None = None,
    changed_since: dt.datetime | None = None,
) -> list[RowMapping]:
    """Instances, newest first, narrowed by project, host, state(s), a substring of the display
    name (case-insensitive), a set of uuids, and a time their row last changed before, or at or
    after (its update, else its creation). Hidden copies (of a server moving between cells) are
    left out."""
    query = sa.select(instances).order_by(instances.c.created_at.desc(), instances.c.id.desc())
    if project_id is not None:
        query = query.where(instances.c.project_id == project_id)
    if host is not None:
        query = query.where(instances.c.host == host)
    if vm_state is not None:
        states = [vm_state] if isinstance(vm_state, str) else list(vm_state)
        query = query.where(instances.c.vm_state.in_(states))
    if name is not None:
        display_name = sa.func.lower(instances.c.display_name)
        query = query.where(display_name.contains(name.lower(), autoescape=True))
    if uuids is not None:
        query = query.where(instances.c.uuid.in_(list(uuids)))
    changed = sa.func.coalesce(instances.c.updated_at, instances.c.created_at)
    if changed_before is not None:
        query = query.where(changed < changed_before)
    if changed_since is not None:
        query = query.where(changed >= changed_since)
    if not include_deleted:
        query = query.where(instances.c.deleted == sa.false())
    # all(): one fetch of every row, where iterating fetches them one by one.
    return list(conn.execute(query.where(instances.c.hidden == sa.false())).mappings().all())


# What a poller's listing reads (``changes-since``), built once: a statement built per call
# cost more to make and to key for SQLAlchemy's cache than SQLite took to run it.
_CHANGED_SINCE = (
    sa.select(instances)
    .where(
        sa.func.coalesce(instances.c.updated_at, instances.c.created_at) >= sa.bindparam("since"),
        instances.c.deleted == sa.false(),
        instances.c.hidden == sa.false(),
    )
    .order_by(instances.c.created_at.desc(), instances.c.id.desc())
)
_CHANGED_SINCE_IN_PROJECT = _CHANGED_SINCE.where(
    instances.c.project_id == sa.bindparam("project_id")
)
# The vm_states asked for in as many places as there are vm_states (the list padded with its
# first): one statement, run on the driver's cursor, where an expanding IN is rendered again
# for each list's length and runs through SQLAlchemy.
_VM_STATE_SLOTS = 16
_IN_VM_STATES = instances.c.vm_state.in_(
    [sa.bindparam(f"vm_state_{slot}") for slot in range(_VM_STATE_SLOTS)]
)
_CHANGED_SINCE_IN_VM_STATES = _CHANGED_SINCE.where(_IN_VM_STATES)
_CHANGED_SINCE_IN_PROJECT_IN_VM_STATES = _CHANGED_SINCE_IN_PROJECT.where(_IN_VM_STATES)


def changed_since(
    conn: Connection,
    since: dt.datetime,
    project_id: str | None = None,
    vm_states: Collection[str] | None = None,
) -> list[dict[str, Any]]:
    """``list_instances(conn, project_id, changed_since=since)``: the live instances (of a
    project) whose row changed at or after ``since``, newest first, hidden copies left out;
    only those in one of ``vm_states`` (at most 16 of them) when given."""
    params: dict[str, Any] = {"since": since}
    if project_id is not None:
        params["project_id"] = project_id
    if vm_states is not None:
        states = sorted(vm_states)
        if not states:
            return []
        if len(states) > _VM_STATE_SLOTS:
            raise ValueError(f"at most {_VM_STATE_SLOTS} vm_states, not {len(states)}")
        padded = states + states[:1] * (_VM_STATE_SLOTS - len(states))
        params.update((f"vm_state_{slot}", state) for slot, state in enumerate(padded))
    query = {
        (False, False): _CHANGED_SINCE,
        (True, False): _CHANGED_SINCE_IN_PROJECT,
        (False, True): _CHANGED_SINCE_IN_VM_STATES,
        (True, True): _CHANGED_SINCE_IN_PROJECT_IN_VM_STATES,
    }[project_id is not None, vm_states is not None]
    return direct.mappings(conn, query, params)


def newest(conn: Connection, limit: int) -> list[RowMapping]:
    """The ``limit`` most recently created live instances, newest first (what the capacity
    view lists as the latest scheduling decisions)."""
    query = (
        sa.select(instances)
        .where(instances.c.deleted == sa.false(), instances.c.hidden == sa.false())
        .order_by(instances.c.created_at.desc(), instances.c.id.desc())
        .limit(limit)
    )
    return list(conn.execute(query).mappings())


def count_by_host(conn: Connection) -> dict[str, int]:
    """How many live instances each host runs (hidden copies left out)."""
    query = (
        sa.select(instances.c.host, sa.func.count())
        .where(
            instances.c.host.is_not(None),
            instances.c.deleted == sa.false(),
            instances.c.hidden == sa.false(),
        )
        .group_by(instances.c.host)
    )
    return {host: int(count) for host, count in conn.execute(query)}


def up_between(
    conn: Connection,
    start: dt.datetime,
    stop: dt.datetime,
    project_id: str | None = None,
    host: str | None = None,
) -> list[RowMapping]:
    """Instances that ran some time between ``start`` and ``stop``, deleted ones too: launched
    before ``stop`` and not terminated before ``start`` (what usage reports and audits read),
    oldest first; a project's, or those whose host is ``host``."""
    query = (
        sa.select(instances)
        .where(
            instances.c.launched_at < stop,
            sa.or_(instances.c.terminated_at.is_(None), instances.c.terminated_at > start),
        )
        .order_by(instances.c.created_at, instances.c.uuid)
    )
    if project_id is not None:
        query = query.where(instances.c.project_id == project_id)
    if host is not None:
        query = query.where(instances.c.host == host)
    return list(conn.execute(query.where(instances.c.hidden == sa.false())).mappings())


def update(
    conn: Connection,
    uuid: str,
    values: Mapping[str, Any],
    expected_task_states: Collection[str | None] | None = None,
    expected_vm_states: Collection[str] | None = None,
) -> bool:
    """Change a live instance's columns. With ``expected_task_states`` (``None`` in it standing
    for no task), only when its task state is one of them; with ``expected_vm_states``, only in
    one of those. False when nothing changed: the instance is gone or deleted, or another writer
    moved its state first."""
    fixed = set(values) & _FIXED
    if fixed:
        raise ValueError(f"instances' {sorted(fixed)} do not change through update()")
    unknown = set(values) - _COLUMNS
    if unknown:
        # As ``values()`` would say (a statement given its values as parameters ignores them).
        raise sa.exc.CompileError(f"Unconsumed column names: {', '.join(sorted(unknown))}")
    guard = (
        None if expected_task_states is None else frozenset(expected_task_states),
        None if expected_vm_states is None else frozenset(expected_vm_states),
    )
    query = _UPDATES.get(guard)
    if query is None:
        query = _UPDATES[guard] = _update(*guard)
    return direct.execute(conn, query, {**values, _WHERE_UUID: uuid}).rowcount > 0


# The updates of :func:`update`, built once per pair of expected states (the code names a few
# dozen) and run on the driver's cursor (``berth.common.direct``): each built per call cost
# more to make and key than the database took to run it. Each sets the columns the values
# given name. (The uuid's parameter is not named after its column, which would make it a value
# to set.)
_WHERE_UUID = "where_uuid"
_COLUMNS = frozenset(instances.c.keys())
_UPDATES: dict[tuple[frozenset[str | None] | None, frozenset[str] | None], sa.Update] = {}


def _update(
    task_states: frozenset[str | None] | None, vm_states: frozenset[str] | None
) -> sa.Update:
    query = instances.update().where(
        instances.c.uuid == sa.bindparam(_WHERE_UUID), instances.c.deleted == sa.false()
    )
    if task_states is not None:
        query = query.where(_task_state_in(task_states))
    if vm_states is not None:
        query = query.where(_one_of(instances.c.vm_state, vm_states))
    return query


def mark_deleted(conn: Connection, uuid: str, now: dt.datetime | None = None) -> bool:
    """Mark the instance deleted (``vm_state`` deleted, no task, terminated now); False when it
    was deleted already or does not exist, so two deletes never both do the cleanup."""
    now = now or utcnow()
    result = conn.execute(
        instances.update()
        .where(instances.c.uuid == uuid, instances.c.deleted == sa.false())
        .values(deleted=True, vm_state="deleted", task_state=None, terminated_at=now)
    )
    return result.rowcount > 0


def copy_to(
    conn: Connection,
    row: Mapping[str, Any],
    values: Mapping[str, Any],
    its_faults: Sequence[Mapping[str, Any]] = (),
) -> None:
    """Write ``row`` (an instance of another cell), changed by ``values``, into this cell with
    its faults; a stale copy of it here (an earlier move) is replaced."""
    purge(conn, row["uuid"])
    copied = {k: v for k, v in row.items() if k not in _NOT_COPIED}
    conn.execute(instances.insert().values(**{**copied, **values}))
    for fault in reversed(its_faults):
        conn.execute(
            instance_faults.insert().values(**{k: v for k, v in fault.items() if k != "id"})
        )
    if its_faults:
        host_changes.touch_faults(conn)


def purge(conn: Connection, uuid: str) -> None:
    """Remove every trace of the instance from this cell (a copy the server left behind)."""
    faults = conn.execute(instance_faults.delete().where(instance_faults.c.instance_uuid == uuid))
    if faults.rowcount:
        host_changes.touch_faults(conn)
    conn.execute(instances.delete().where(instances.c.uuid == uuid))


def _task_state_in(states: Collection[str | None]) -> sa.ColumnElement[bool]:
    named = [state for state in states if state is not None]
    clauses = [_one_of(instances.c.task_state, named)]
    if None in states:
        clauses.append(instances.c.task_state.is_(None))
    return sa.or_(*clauses)


def _one_of(column: sa.Column[Any], values: Collection[str]) -> sa.ColumnElement[bool]:
    """``column IN values`` as equalities, each value fixed in the statement: an IN list is
    rendered again at each execution, which the driver's cursor does not do."""
    return sa.or_(sa.false(), *(column == value for value in sorted(values)))


# Faults


def add_fault(
    conn: Connection,
    instance_uuid: str,
    code: int,
    message: str,
    details: str = "",
    host: str | None = None,
    diagnosis: Mapping[str, Any] | None = None,
) -> None:
    """Record why the instance failed (the message is cut to the column's 255 characters; the
    details are kept whole; a scheduling failure's diagnosis is kept as data)."""
    conn.execute(
        instance_faults.insert().values(
            instance_uuid=instance_uuid,
            code=code,
            message=message[:_FAULT_MESSAGE_LENGTH],
            details=details,
            host=host,
            created_at=utcnow(),
            diagnosis=None if diagnosis is None else dict(diagnosis),
        )
    )
    if host is not None:
        host_changes.touch_faults(conn)


def latest_fault(conn: Connection, instance_uuid: str) -> RowMapping | None:
    return latest_faults(conn, [instance_uuid]).get(instance_uuid)


def latest_faults(conn: Connection, instance_uuids: Collection[str]) -> dict[str, RowMapping]:
    """The newest fault of each of these instances that has one (what a server list shows)."""
    newest = (
        sa.select(sa.func.max(instance_faults.c.id))
        .where(instance_faults.c.instance_uuid.in_(list(instance_uuids)))
        .group_by(instance_faults.c.instance_uuid)
    )
    query = sa.select(instance_faults).where(instance_faults.c.id.in_(newest))
    return {row["instance_uuid"]: row for row in conn.execute(query).mappings()}


def faults(conn: Connection, instance_uuid: str) -> list[RowMapping]:
    """Every fault of the instance, newest first."""
    query = (
        sa.select(instance_faults)
        .where(instance_faults.c.instance_uuid == instance_uuid)
        .order_by(instance_faults.c.id.desc())
    )
    return list(conn.execute(query).mappings())


def failures_since(conn: Connection, since: dt.datetime) -> list[tuple[dt.datetime, str]]:
    """The faults recorded against a host since ``since`` (its recent build failures), as
    (when, host), oldest first."""
    query = (
        sa.select(instance_faults.c.created_at, instance_faults.c.host)
        .where(instance_faults.c.host.is_not(None), instance_faults.c.created_at >= since)
        .order_by(instance_faults.c.created_at)
    )
    return [(when, host) for when, host in conn.execute(query)]

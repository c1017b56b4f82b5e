"""Instance actions and their events in a cell database: what happened to a server, request by
request.

An action is one API request (``create``, ``delete``, ``migrate``...), found by its request id.
Its events are the steps taken for it, each with the host it ran on and how it ended: a build
that was rescheduled has one ``compute_build_and_run_instance`` event per host tried, each
failed one saying why. That is the history a fault points to.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.compute.db.cell_schema import instance_action_events, instance_actions

SUCCESS = "Success"
ERROR = "Error"
# Built once: every build records its steps (a statement built per call with ``values()``
# cost more to make and key than the database took to run it).
_INSERT_ACTION = instance_actions.insert()
_INSERT_EVENT = instance_action_events.insert()
# Where the database answers an insert with the new row's id (RETURNING); else the driver's
# ``lastrowid`` says it.
_INSERT_ACTION_RETURNING = _INSERT_ACTION.returning(instance_actions.c.id)
_INSERT_EVENT_RETURNING = _INSERT_EVENT.returning(instance_action_events.c.id)
_NEWEST = (
    sa.select(instance_actions.c.id)
    .where(
        instance_actions.c.instance_uuid == sa.bindparam("instance_uuid"),
        instance_actions.c.action == sa.bindparam("action"),
    )
    .order_by(instance_actions.c.start_time.desc(), instance_actions.c.id.desc())
    .limit(1)
)
# (The event's parameter is not named ``id``, which would make it a value to set.)
_FINISH_EVENT = instance_action_events.update().where(
    instance_action_events.c.id == sa.bindparam("event_id"),
    instance_action_events.c.finish_time.is_(None),
)


def start_action(
    conn: Connection,
    instance_uuid: str,
    action: str,
    request_id: str,
    user_id: str,
    project_id: str,
    start_time: dt.datetime | None = None,
) -> int:
    """Record that a request began acting on the instance; the action's id."""
    row = {
        "instance_uuid": instance_uuid,
        "action": action,
        "request_id": request_id,
        "user_id": user_id,
        "project_id": project_id,
        "start_time": start_time or utcnow(),
    }
    return _inserted_id(conn, _INSERT_ACTION, _INSERT_ACTION_RETURNING, row)


def finish_action(
    conn: Connection, action_id: int, message: str | None = None, now: dt.datetime | None = None
) -> bool:
    """Close the action (``message`` is "Error" when a step failed); False when it is gone."""
    result = conn.execute(
        instance_actions.update()
        .where(instance_actions.c.id == action_id)
        .values(finish_time=now or utcnow(), message=message)
    )
    return result.rowcount > 0


def get_action(conn: Connection, instance_uuid: str, request_id: str) -> RowMapping | None:
    """The instance's action of this request (the newest, should a request act twice)."""
    query = (
        sa.select(instance_actions)
        .where(
            instance_actions.c.instance_uuid == instance_uuid,
            instance_actions.c.request_id == request_id,
        )
        .order_by(instance_actions.c.id.desc())
    )
    return conn.execute(query).mappings().first()


def list_actions(conn: Connection, instance_uuid: str) -> list[RowMapping]:
    """The instance's actions, newest first."""
    query = (
        sa.select(instance_actions)
        .where(instance_actions.c.instance_uuid == instance_uuid)
        .order_by(instance_actions.c.start_time.desc(), instance_actions.c.id.desc())
    )
    return list(conn.execute(query).mappings())


def newest_action(conn: Connection, instance_uuid: str, action: str) -> int | None:
    """The id of the instance's newest action named ``action`` (the first such in
    :func:`list_actions`' order), None when it has none."""
    params = {"instance_uuid": instance_uuid, "action": action}
    found = direct.execute(conn, _NEWEST, params).scalar()
    return None if found is None else int(found)


def add_event(
    conn: Connection,
    action_id: int,
    event: str,
    host: str | None = None,
    result: str | None = None,
    details: str | None = None,
    start_time: dt.datetime | None = None,
    finish_time: dt.datetime | None = None,
) -> int:
    """Record a step of the action; the event's id. Without ``result`` the step is under way
    (:func:`finish_event` ends it); with one, it is over already, ended at ``finish_time``
    (when it started, if not given)."""
    start_time = start_time or utcnow()
    row = {
        "action_id": action_id,
        "event": event,
        "host": host,
        "start_time": start_time,
        "finish_time": (finish_time or start_time) if result is not None else None,
        "result": result,
        "details": details,
    }
    return _inserted_id(conn, _INSERT_EVENT, _INSERT_EVENT_RETURNING, row)


def _inserted_id(
    conn: Connection, insert: sa.Insert, returning: sa.Insert, row: Mapping[str, Any]
) -> int:
    """Insert ``row`` on the driver's cursor (``berth.common.direct``: every build records an
    action and its steps); the new row's id."""
    if conn.dialect.insert_returning:
        return int(direct.execute(conn, returning, row).scalar())
    found = direct.execute(conn, insert, row).lastrowid
    assert found is not None, "a driver without RETURNING tells the id it gave"
    return found


def finish_event(
    conn: Connection,
    event_id: int,
    result: str,
    details: str | None = None,
    now: dt.datetime | None = None,
) -> bool:
    """End a step with its result (and, for a failure, why); False when it had ended already
    or is gone, so a step redelivered does not rewrite its history."""
    values = {
        "event_id": event_id,
        "finish_time": now or utcnow(),
        "result": result,
        "details": details,
    }
    return direct.execute(conn, _FINISH_EVENT, values).rowcount > 0


def events(conn: Connection, action_id: int) -> list[RowMapping]:
    """The action's events in the order they started."""
    query = (
        sa.select(instance_action_events)
        .where(instance_action_events.c.action_id == action_id)
        .order_by(instance_action_events.c.start_time, instance_action_events.c.id)
    )
    return list(conn.execute(query).mappings())


def events_of_instance(conn: Connection, instance_uuid: str) -> list[RowMapping]:
    """Every event of every action of the instance, in the order they started, each with its
    action's ``action`` and ``request_id``."""
    query = (
        sa.select(
            instance_action_events,
            instance_actions.c.action,
            instance_actions.c.request_id,
        )
        .join(instance_actions, instance_actions.c.id == instance_action_events.c.action_id)
        .where(instance_actions.c.instance_uuid == instance_uuid)
        .order_by(instance_action_events.c.start_time, instance_action_events.c.id)
    )
    return list(conn.execute(query).mappings())


def mark_error(conn: Connection, action_id: int) -> None:
    """Say the action failed (a step of it ended in Error), leaving it open."""
    conn.execute(
        instance_actions.update().where(instance_actions.c.id == action_id).values(message=ERROR)
    )


def action_of_event(conn: Connection, event_id: int) -> int:
    """The id of the action the event belongs to."""
    query = sa.select(instance_action_events.c.action_id).where(
        instance_action_events.c.id == event_id
    )
    return int(conn.execute(query).scalar_one())


def copy(conn: Connection, found: list[tuple[RowMapping, list[RowMapping]]]) -> None:
    """Write actions and their events read from another cell (a server moving here)."""
    for action, its_events in found:
        values = {k: v for k, v in action.items() if k != "id"}
        action_id = conn.execute(instance_actions.insert().values(**values)).inserted_primary_key[0]
        for event in its_events:
            kept = {k: v for k, v in event.items() if k not in ("id", "action_id")}
            conn.execute(instance_action_events.insert().values(action_id=action_id, **kept))


def purge(conn: Connection, instance_uuid: str) -> None:
    """Remove the instance's actions and their events from this cell."""
    ids = sa.select(instance_actions.c.id).where(instance_actions.c.instance_uuid == instance_uuid)
    conn.execute(instance_action_events.delete().where(instance_action_events.c.action_id.in_(ids)))
    conn.execute(instance_actions.delete().where(instance_actions.c.instance_uuid == instance_uuid))

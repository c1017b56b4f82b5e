"""The build queue: servers that found no host and wait for room (in the API database, beside
their BuildRequests). ``berth.compute.conductor.queue`` says how it is worked."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import build_queue


def hold(
    conn: Connection,
    instance_uuid: str,
    now: dt.datetime,
    timeout: dt.timedelta,
    message: str,
    diagnosis: Mapping[str, Any] | None,
) -> RowMapping:
    """Queue the server (its first wait starts now and ends after ``timeout``) or, queued
    already, count one more attempt and keep its deadline; answers the row as it is now."""
    inserted = try_insert(
        conn,
        build_queue.insert().values(
            instance_uuid=instance_uuid, queued_at=now, expires_at=now + timeout, attempts=1,
            message=message, diagnosis=None if diagnosis is None else dict(diagnosis),
        ),
    )  # fmt: skip
    if not inserted:
        tried(conn, instance_uuid, message, diagnosis)
    found = get(conn, instance_uuid)
    assert found is not None
    return found


def tried(
    conn: Connection, instance_uuid: str, message: str, diagnosis: Mapping[str, Any] | None
) -> None:
    """One more attempt that found no room; the server's turn is over."""
    conn.execute(
        build_queue.update()
        .where(build_queue.c.instance_uuid == instance_uuid)
        .values(
            attempts=build_queue.c.attempts + 1, retrying_since=None, message=message,
            diagnosis=None if diagnosis is None else dict(diagnosis),
        )
    )  # fmt: skip


def get(conn: Connection, instance_uuid: str) -> RowMapping | None:
    query = sa.select(build_queue).where(build_queue.c.instance_uuid == instance_uuid)
    return conn.execute(query).mappings().first()


def take_turn(
    conn: Connection, instance_uuid: str, now: dt.datetime, stale_after: dt.timedelta
) -> bool:
    """Mark the server as being retried by this caller; False when another caller is at it (a
    mark older than ``stale_after`` is a caller that died, and is taken over)."""
    result = conn.execute(
        build_queue.update()
        .where(
            build_queue.c.instance_uuid == instance_uuid,
            sa.or_(
                build_queue.c.retrying_since.is_(None),
                build_queue.c.retrying_since < now - stale_after,
            ),
        )
        .values(retrying_since=now)
    )
    return result.rowcount > 0


def remove(conn: Connection, instance_uuid: str) -> bool:
    result = conn.execute(build_queue.delete().where(build_queue.c.instance_uuid == instance_uuid))
    return result.rowcount > 0


def list_queued(conn: Connection, uuids: list[str] | None = None) -> list[RowMapping]:
    """Every queued server (or those of ``uuids``), first queued first."""
    query = sa.select(build_queue).order_by(build_queue.c.queued_at, build_queue.c.id)
    if uuids is not None:
        query = query.where(build_queue.c.instance_uuid.in_(uuids))
    return list(conn.execute(query).mappings())

"""The compute service's services (host agents, conductors) in a cell database.

A service registers itself at start with :func:`get_or_create` (once per host and binary, however
many times it starts, even two processes at once) and then reports with :func:`heartbeat`. It is
up while its last report is recent and no operator has forced it down.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common.timeutils import utcnow
from berth.compute.db import host_changes
from berth.compute.db._tables import try_insert
from berth.compute.db.cell_schema import services

_OPERATOR_FIELDS = frozenset({"disabled", "disabled_reason", "forced_down"})
# Every update of a service but its heartbeat sets this too: the scheduler's cache of hosts
# reads again the services whose count moved, and follows heartbeats by time
# (``berth.compute.scheduler.host_cache``).
_BUMP = {"change_count": services.c.change_count + 1}
# Below every backend's limit on bound parameters in one statement (SQLite's is 32,766).
_IDS_PER_STATEMENT = 1000


def get_or_create(
    conn: Connection, host: str, binary: str, topic: str, version: int = 0
) -> RowMapping:
    """The service of this binary on this host, registered now if it was not."""
    found = find(conn, host, binary)
    if found is not None:
        return found
    try_insert(
        conn,
        services.insert().values(
            uuid=str(uuidlib.uuid4()),
            host=host,
            binary=binary,
            topic=topic,
            disabled=False,
            forced_down=False,
            version=version,
        ),
    )
    made = find(conn, host, binary)
    assert made is not None
    return made


def create_many(conn: Connection, hosts: Collection[str], binary: str, topic: str) -> bool:
    """Register the service of this binary on each host, in one statement (a fleet's first
    start); False, with nothing written, when some already exist (another process registered
    them meanwhile): ``get_or_create`` them one by one then."""
    rows = [
        {"uuid": str(uuidlib.uuid4()), "host": host, "binary": binary, "topic": topic,
         "disabled": False, "forced_down": False, "version": 0}
        for host in hosts
    ]  # fmt: skip
    if not rows:
        return True
    return try_insert(conn, services.insert(), rows)


def find(conn: Connection, host: str, binary: str) -> RowMapping | None:
    query = sa.select(services).where(services.c.host == host, services.c.binary == binary)
    return conn.execute(query).mappings().first()


def get(conn: Connection, service_id: int) -> RowMapping | None:
    return conn.execute(sa.select(services).where(services.c.id == service_id)).mappings().first()


def get_by_uuid(conn: Connection, uuid: str) -> RowMapping | None:
    return conn.execute(sa.select(services).where(services.c.uuid == uuid)).mappings().first()


def list_services(
    conn: Connection, binary: str | None = None, host: str | None = None
) -> list[RowMapping]:
    query = sa.select(services).order_by(services.c.id)
    if binary is not None:
        query = query.where(services.c.binary == binary)
    if host is not None:
        query = query.where(services.c.host == host)
    return list(conn.execute(query).mappings())


def update(conn: Connection, service_id: int, values: Mapping[str, Any]) -> bool:
    """An operator's change: ``disabled``, ``disabled_reason``, ``forced_down``; False when
    there is no such service."""
    unknown = set(values) - _OPERATOR_FIELDS
    if unknown:
        raise ValueError(f"services have no updatable fields {sorted(unknown)}")
    result = conn.execute(
        services.update().where(services.c.id == service_id).values(**values, **_BUMP)
    )
    if result.rowcount > 0:
        host_changes.touch_services(conn, [service_id])
    return result.rowcount > 0


def heartbeat(
    conn: Connection, service_id: int, now: dt.datetime | None = None, version: int | None = None
) -> bool:
    """Record that the service is alive (and its version, when given); False when the service
    row is gone (an operator deleted it: the service should register again)."""
    values: dict[str, Any] = {"last_seen_up": now or utcnow()}
    if version is not None:
        values["version"] = version
    result = conn.execute(services.update().where(services.c.id == service_id).values(**values))
    return result.rowcount > 0


def heartbeat_all(conn: Connection, service_ids: Collection[int], now: dt.datetime) -> None:
    """``heartbeat`` for many services at once (a fleet starting, a simulator's beat)."""
    ids = list(service_ids)
    for start in range(0, len(ids), _IDS_PER_STATEMENT):
        chosen = services.c.id.in_(ids[start : start + _IDS_PER_STATEMENT])
        conn.execute(services.update().where(chosen).values(last_seen_up=now))


def delete(conn: Connection, service_id: int) -> bool:
    """Delete the service and its compute nodes (and their PCI devices); False when gone."""
    result = conn.execute(services.delete().where(services.c.id == service_id))
    if result.rowcount > 0:
        host_changes.touch_services(conn, [service_id])
    return result.rowcount > 0


def is_up(service: Mapping[str, Any], now: dt.datetime, down_time: float) -> bool:
    """Whether a service reported within ``down_time`` seconds and is not forced down."""
    if service["forced_down"] or service["last_seen_up"] is None:
        return False
    return (now - service["last_seen_up"]).total_seconds() <= down_time

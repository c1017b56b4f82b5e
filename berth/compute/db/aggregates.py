"""Host aggregates, their hosts and metadata, in the API database.

An aggregate with an ``availability_zone`` metadata key makes a zone of its hosts; a host in no
such aggregate is in the default zone. Each aggregate's uuid also names the Placement aggregate
that mirrors its hosts (which the API keeps in step; nothing here talks to Placement).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import (
    aggregate_change_count,
    aggregate_hosts,
    aggregate_metadata,
    aggregates,
)
from berth.compute.db.errors import Duplicate

AVAILABILITY_ZONE = "availability_zone"


@dataclass(frozen=True, slots=True)
class Aggregate:
    id: int
    uuid: str
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime | None
    hosts: tuple[str, ...] = ()
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def availability_zone(self) -> str | None:
        return self.metadata.get(AVAILABILITY_ZONE)


def create(conn: Connection, uuid: str, name: str) -> Aggregate:
    """Add an empty aggregate; :class:`Duplicate` when its name (or uuid) is taken."""
    if not try_insert(conn, aggregates.insert().values(uuid=uuid, name=name)):
        if get_by_uuid(conn, uuid) is not None:
            raise Duplicate("aggregate uuid", uuid)
        raise Duplicate("aggregate name", name)
    made = get_by_uuid(conn, uuid)
    assert made is not None
    _count_change(conn)
    return made


def get(conn: Connection, aggregate_id: int) -> Aggregate | None:
    """By the integer id the API uses."""
    found = _load(conn, aggregates.c.id == aggregate_id)
    return found[0] if found else None


def get_by_uuid(conn: Connection, uuid: str) -> Aggregate | None:
    found = _load(conn, aggregates.c.uuid == uuid)
    return found[0] if found else None


def list_aggregates(conn: Connection) -> list[Aggregate]:
    return _load(conn)


def rename(conn: Connection, aggregate_id: int, name: str) -> bool:
    """False when there is no such aggregate; :class:`Duplicate` when another has the name."""
    statement = aggregates.update().where(aggregates.c.id == aggregate_id).values(name=name)
    try:
        with conn.begin_nested():
            result = conn.execute(statement)
    except IntegrityError:
        raise Duplicate("aggregate name", name) from None
    if result.rowcount:
        _count_change(conn)
    return result.rowcount > 0


def delete(conn: Connection, aggregate_id: int) -> bool:
    """Delete the aggregate with its host list and metadata; False when it was gone."""
    result = conn.execute(aggregates.delete().where(aggregates.c.id == aggregate_id))
    if result.rowcount:
        _count_change(conn)
    return result.rowcount > 0


# Hosts


def add_host(conn: Connection, aggregate_id: int, host: str) -> bool:
    """Put a host in the aggregate; False when it is in it already (or there is no such
    aggregate)."""
    if not _exists(conn, aggregate_id):
        return False
    added = try_insert(conn, aggregate_hosts.insert().values(aggregate_id=aggregate_id, host=host))
    if added:
        _touch(conn, aggregate_id)
    return added


def remove_host(conn: Connection, aggregate_id: int, host: str) -> bool:
    """Take a host out; False when it was not in the aggregate."""
    result = conn.execute(
        aggregate_hosts.delete().where(
            aggregate_hosts.c.aggregate_id == aggregate_id, aggregate_hosts.c.host == host
        )
    )
    if result.rowcount:
        _touch(conn, aggregate_id)
    return result.rowcount > 0


def hosts_of(conn: Connection, aggregate_id: int) -> list[str]:
    query = (
        sa.select(aggregate_hosts.c.host)
        .where(aggregate_hosts.c.aggregate_id == aggregate_id)
        .order_by(aggregate_hosts.c.host)
    )
    return list(conn.execute(query).scalars())


def aggregates_of_host(conn: Connection, host: str) -> list[Aggregate]:
    member = sa.select(aggregate_hosts.c.aggregate_id).where(aggregate_hosts.c.host == host)
    return _load(conn, aggregates.c.id.in_(member))


def availability_zone_of(conn: Connection, host: str, default: str) -> str:
    """The zone of the host's aggregates (``default`` when none has one). A host is meant to be
    in one zone; if its aggregates name several, they are all given, sorted, comma-separated."""
    query = (
        sa.select(aggregate_metadata.c.value)
        .join(aggregate_hosts, aggregate_hosts.c.aggregate_id == aggregate_metadata.c.aggregate_id)
        .where(aggregate_hosts.c.host == host, aggregate_metadata.c.key == AVAILABILITY_ZONE)
        .distinct()
    )
    zones = sorted(conn.execute(query).scalars())
    return ",".join(zones) if zones else default


def zone_aggregates(conn: Connection, zone: str) -> list[str]:
    """The uuids of the aggregates that make ``zone`` (what Placement's ``member_of`` gets)."""
    query = (
        sa.select(aggregates.c.uuid)
        .join(aggregate_metadata, aggregate_metadata.c.aggregate_id == aggregates.c.id)
        .where(aggregate_metadata.c.key == AVAILABILITY_ZONE, aggregate_metadata.c.value == zone)
        .order_by(aggregates.c.uuid)
    )
    return list(conn.execute(query).scalars())


# Metadata


def set_metadata(conn: Connection, aggregate_id: int, items: Mapping[str, str]) -> bool:
    """Add or replace these keys (others stay); False when there is no such aggregate."""
    if not _exists(conn, aggregate_id):
        return False
    for key, value in items.items():
        row = aggregate_metadata.c.aggregate_id == aggregate_id, aggregate_metadata.c.key == key
        updated = conn.execute(aggregate_metadata.update().where(*row).values(value=value))
        if updated.rowcount == 0:
            new = aggregate_metadata.insert().values(
                aggregate_id=aggregate_id, key=key, value=value
            )
            if not try_insert(conn, new):
                conn.execute(aggregate_metadata.update().where(*row).values(value=value))
    _touch(conn, aggregate_id)
    return True


def unset_metadata(conn: Connection, aggregate_id: int, keys: Collection[str]) -> int:
    """Remove these keys; how many the aggregate had."""
    result = conn.execute(
        aggregate_metadata.delete().where(
            aggregate_metadata.c.aggregate_id == aggregate_id,
            aggregate_metadata.c.key.in_(list(keys)),
        )
    )
    if result.rowcount:
        _touch(conn, aggregate_id)
    return result.rowcount


# Loading


def _exists(conn: Connection, aggregate_id: int) -> bool:
    query = sa.select(aggregates.c.id).where(aggregates.c.id == aggregate_id)
    return conn.execute(query).first() is not None


def _touch(conn: Connection, aggregate_id: int) -> None:
    conn.execute(
        aggregates.update().where(aggregates.c.id == aggregate_id).values(updated_at=utcnow())
    )
    _count_change(conn)


# Every write of an aggregate, its hosts or metadata counts one, as its last statement (the row
# stays locked to the commit: aggregates are written rarely, by operators).
_COUNT = (
    aggregate_change_count.update()
    .where(aggregate_change_count.c.id == 1)
    .values(value=aggregate_change_count.c.value + 1)
)
_COUNTED = sa.select(aggregate_change_count.c.value).where(aggregate_change_count.c.id == 1)


def _count_change(conn: Connection) -> None:
    conn.execute(_COUNT)


def change_count(conn: Connection) -> int:
    """How many writes the aggregates have had: while it stays, ``list_aggregates`` answers
    as before. Read it before the aggregates, so that those are never older than it. On the
    driver's cursor: every scheduling pass asks, outside a transaction
    (``Database.one_statement``)."""
    return int(direct.execute(conn, _COUNTED).scalar())


def _load(conn: Connection, *where: sa.ColumnElement[bool]) -> list[Aggregate]:
    """Aggregates (matching ``where``) with their hosts and metadata, by id, in three queries."""
    rows = list(conn.execute(sa.select(aggregates).where(*where).order_by(aggregates.c.id)))
    if not rows:
        return []
    ids = [row.id for row in rows]
    hosts: dict[int, list[str]] = {aggregate_id: [] for aggregate_id in ids}
    query = (
        sa.select(aggregate_hosts.c.aggregate_id, aggregate_hosts.c.host)
        .where(aggregate_hosts.c.aggregate_id.in_(ids))
        .order_by(aggregate_hosts.c.host)
    )
    for aggregate_id, host in conn.execute(query):
        hosts[aggregate_id].append(host)
    metadata: dict[int, dict[str, str]] = {aggregate_id: {} for aggregate_id in ids}
    query = (
        sa.select(
            aggregate_metadata.c.aggregate_id, aggregate_metadata.c.key, aggregate_metadata.c.value
        )
        .where(aggregate_metadata.c.aggregate_id.in_(ids))
        .order_by(aggregate_metadata.c.key)
    )
    for aggregate_id, key, value in conn.execute(query):
        metadata[aggregate_id][key] = value
    return [
        Aggregate(
            id=row.id,
            uuid=row.uuid,
            name=row.name,
            created_at=row.created_at,
            updated_at=row.updated_at,
            hosts=tuple(hosts[row.id]),
            metadata=metadata[row.id],
        )
        for row in rows
    ]

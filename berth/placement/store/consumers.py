"""Consumers: whoever holds allocations, with the project, user and type they belong to.

A consumer record exists exactly while it has allocations: writing allocations creates it, and
the write that leaves it without any removes it. Its generation guards its allocations the way a
provider's guards inventory: every change of them is ``UPDATE ... WHERE generation = :seen``.
Projects, users and consumer types are rows keyed by the identifiers clients send, created on
first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.placement import exceptions
from berth.placement.store.schema import allocations, consumer_types, consumers, projects, users

# Before 1.8 a client could allocate without naming a project or user; such consumers belong to
# this placeholder project and user (upstream's default for both).
INCOMPLETE_ID = "00000000-0000-0000-0000-000000000000"

# What 1.38 shows for a consumer written before consumer types existed.
UNKNOWN_TYPE = "unknown"


class GenerationConflict(exceptions.ConcurrentUpdate):
    """The client wrote against a consumer generation that is not the current one."""


@dataclass(frozen=True, slots=True)
class Consumer:
    id: int
    uuid: str
    generation: int
    project_id: str
    user_id: str
    consumer_type: str | None


def find(conn: Connection, uuid: str) -> Consumer | None:
    row = conn.execute(
        sa.select(
            consumers.c.id,
            consumers.c.uuid,
            consumers.c.generation,
            projects.c.external_id.label("project_id"),
            users.c.external_id.label("user_id"),
            consumer_types.c.name.label("consumer_type"),
        )
        .select_from(consumers)
        .join(projects, projects.c.id == consumers.c.project_id)
        .join(users, users.c.id == consumers.c.user_id)
        .outerjoin(consumer_types, consumer_types.c.id == consumers.c.consumer_type_id)
        .where(consumers.c.uuid == uuid)
    ).first()
    return Consumer(**row._asdict()) if row is not None else None


@dataclass(frozen=True, slots=True)
class Owner:
    """Who a write says a consumer belongs to; a type of None leaves the consumer's as it is."""

    project_id: str
    user_id: str
    consumer_type: str | None = None


def ensure(
    conn: Connection, uuid: str, owner: Owner, seen: int | None, check_generation: bool
) -> tuple[Consumer, bool]:
    """The consumer about to get new allocations, and whether this write created it.

    A new consumer is created at the generation its first allocations give it (1); an existing
    one gets its owner updated if changed, and the caller advances its generation. With
    ``check_generation`` (from 1.28) the client must have seen the current generation, or None
    for a consumer that does not exist yet.
    """
    expects_new = check_generation and seen is None
    if expects_new and conn.dialect.name != "mysql":
        # A client that expects a new consumer is nearly always right, and its owner nearly
        # always known: create it in one statement, or learn which of those was wrong.
        new_id = _create_for_known_owner(conn, uuid, owner)
        if new_id is not None:
            return Consumer(
                new_id, uuid, 1, owner.project_id, owner.user_id, owner.consumer_type
            ), True
    project_id, user_id, type_id = _owner_ids(conn, owner)
    consumer = None if expects_new else find(conn, uuid)
    if consumer is None:
        if check_generation:
            _check_generation(None, seen)
        new_id = _create(conn, uuid, project_id, user_id, type_id)
        if new_id is not None:
            created = Consumer(
                new_id, uuid, 1, owner.project_id, owner.user_id, owner.consumer_type
            )
            return created, True
        # Another writer created it since we looked; from here on it is an existing consumer.
        consumer = _existing(conn, uuid)
    if check_generation:
        _check_generation(consumer, seen)
    if (consumer.project_id, consumer.user_id) != (owner.project_id, owner.user_id) or (
        owner.consumer_type is not None and owner.consumer_type != consumer.consumer_type
    ):
        values: dict[str, object] = {"project_id": project_id, "user_id": user_id}
        if type_id is not None:
            values["consumer_type_id"] = type_id
        # The generation moves with the allocations written alongside, not here.
        conn.execute(
            consumers.update()
            .where(consumers.c.id == consumer.id)
            .values(updated_at=utcnow(), **values)
        )
    return consumer, False


def _owner_ids(conn: Connection, owner: Owner) -> tuple[int, int, int | None]:
    """The ids of the owner's project, user and consumer type, made where missing. One query
    when they all exist, as they do for every claim but a project's first."""
    named = [
        (projects, projects.c.external_id, owner.project_id),
        (users, users.c.external_id, owner.user_id),
    ]
    if owner.consumer_type is not None:
        named.append((consumer_types, consumer_types.c.name, owner.consumer_type))
    found = conn.execute(
        sa.select(
            *(
                sa.select(table.c.id).where(key == value).scalar_subquery()
                for table, key, value in named
            )
        )
    ).one()
    ids = [
        int(known) if known is not None else _ensure_named(conn, table, key, value)
        for known, (table, key, value) in zip(found, named, strict=True)
    ]
    return ids[0], ids[1], ids[2] if len(ids) > 2 else None


def _ensure_named(conn: Connection, table: sa.Table, key: sa.Column[str], value: str) -> int:
    found = conn.scalar(sa.select(table.c.id).where(key == value))
    if found is not None:
        return int(found)
    try:
        # A savepoint, so that losing the race to another writer does not abort our transaction.
        with conn.begin_nested():
            new_id = conn.execute(
                table.insert().values({key.name: value, "created_at": utcnow()})
            ).inserted_primary_key[0]
        return int(new_id)
    except IntegrityError:
        return int(conn.scalar(sa.select(table.c.id).where(key == value)))


def _existing(conn: Connection, uuid: str) -> Consumer:
    consumer = find(conn, uuid)
    if consumer is None:
        # Created and removed again by others while we looked.
        raise exceptions.ConcurrentUpdate(
            "Another thread concurrently updated the data. Please retry your update"
        )
    return consumer


def _create(
    conn: Connection, uuid: str, project_id: int, user_id: int, type_id: int | None
) -> int | None:
    """Insert a consumer at generation 1: its id, or None when another writer created it first.

    One statement that skips an existing uuid, rather than a savepoint around a plain insert
    (two more round trips on every claim)."""
    values = {
        "uuid": uuid,
        "project_id": project_id,
        "user_id": user_id,
        "consumer_type_id": type_id,
        "generation": 1,
        "created_at": utcnow(),
    }
    if conn.dialect.name == "mysql":
        # IGNORE also downgrades other errors, but every value here was just checked or made.
        created = conn.execute(consumers.insert().prefix_with("IGNORE").values(values))
        return int(created.lastrowid) if created.rowcount == 1 else None
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    new_id = conn.scalar(
        insert(consumers)
        .values(values)
        .on_conflict_do_nothing(index_elements=[consumers.c.uuid])
        .returning(consumers.c.id)
    )
    return int(new_id) if new_id is not None else None


def _create_for_known_owner_statement(dialect: str, typed: bool) -> sa.Insert:
    """``INSERT ... SELECT`` of a consumer at generation 1 with its owner's ids looked up in the
    same statement: one row (each key is unique) when they all exist, none otherwise."""
    owners = projects.join(users, users.c.external_id == sa.bindparam("user"))
    type_id: sa.ColumnElement[object] = sa.null()
    if typed:
        owners = owners.join(consumer_types, consumer_types.c.name == sa.bindparam("type"))
        type_id = consumer_types.c.id
    rows = (
        sa.select(
            sa.bindparam("uuid", type_=consumers.c.uuid.type),
            projects.c.id,
            users.c.id,
            type_id,
            sa.literal(1),
            sa.bindparam("now", type_=consumers.c.created_at.type),
        )
        .select_from(owners)
        .where(projects.c.external_id == sa.bindparam("project"))
    )
    columns = ["uuid", "project_id", "user_id", "consumer_type_id", "generation", "created_at"]
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return (
        insert(consumers)
        .from_select(columns, rows)
        .on_conflict_do_nothing(index_elements=[consumers.c.uuid])
        .returning(consumers.c.id)
    )


# Built once per dialect, with and without a consumer type: every claim of a new consumer runs one.
_CREATE_FOR_KNOWN_OWNER = {
    (dialect, typed): _create_for_known_owner_statement(dialect, typed)
    for dialect in ("postgresql", "sqlite")
    for typed in (False, True)
}


def _create_for_known_owner(conn: Connection, uuid: str, owner: Owner) -> int | None:
    """Insert a consumer at generation 1 whose project, user and type already exist: its id, or
    None if the consumer exists or its owner does not (PostgreSQL and SQLite)."""
    new_id = direct.execute(
        conn,
        _CREATE_FOR_KNOWN_OWNER[conn.dialect.name, owner.consumer_type is not None],
        {
            "uuid": uuid,
            "project": owner.project_id,
            "user": owner.user_id,
            "type": owner.consumer_type,
            "now": utcnow(),
        },
    ).scalar()
    return int(new_id) if new_id is not None else None


def _check_generation(consumer: Consumer | None, seen: int | None) -> None:
    current = consumer.generation if consumer is not None else None
    if current != seen:
        expected = "null" if current is None else str(current)
        raise GenerationConflict(
            f"consumer generation conflict - expected {expected} but got {seen}"
        )


# Built once: every claim that replaces a consumer's allocations runs it.
_BUMP = (
    consumers.update()
    .where(
        consumers.c.id == sa.bindparam("consumer"), consumers.c.generation == sa.bindparam("seen")
    )
    .values(generation=sa.bindparam("next"), updated_at=sa.bindparam("now"))
)


def bump_generation(conn: Connection, consumer: Consumer) -> int:
    """Advance the consumer's generation if it is still the one ``consumer`` was read with."""
    updated = direct.execute(
        conn,
        _BUMP,
        {
            "consumer": consumer.id,
            "seen": consumer.generation,
            "next": consumer.generation + 1,
            "now": utcnow(),
        },
    )
    if updated.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            "Another thread concurrently updated the data. Please retry your update"
        )
    return consumer.generation + 1


def delete_unused(conn: Connection, uuids: Iterable[str]) -> None:
    """Remove those of these consumers that no longer hold any allocation."""
    wanted = sorted(set(uuids))
    if not wanted:
        return
    held = sa.select(allocations.c.id).where(allocations.c.consumer_id == consumers.c.uuid)
    conn.execute(consumers.delete().where(consumers.c.uuid.in_(wanted), ~held.exists()))

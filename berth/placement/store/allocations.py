"""Allocations: reading them by consumer or provider, releasing a consumer's, and the claim write.

A claim write replaces the allocations of one or more consumers in the caller's single write
transaction, and it can never leave a provider past its capacity, however many writers race:

1. every provider involved gets its generation advanced first, which locks its row until the
   transaction ends (one ``UPDATE``);
2. then its inventories and the usage left once the consumers' old allocations are gone are read,
   and the new amounts are checked against them with ``capacity.fit``.

A second writer on one of those providers waits at step 1 until the first commits or rolls back;
its step 2 then reads the committed usage (each statement of a READ COMMITTED transaction sees
what was committed before it began; SQLite has a single writer). So no check ever passes on stale
usage, and writers queue instead of failing and starting over. A failed check rolls the whole
transaction back, generations included.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.placement import capacity, exceptions
from berth.placement.capacity import Inventory
from berth.placement.store import changes, consumers, listed, names, schema
from berth.placement.store.consumers import Consumer
from berth.placement.store.listed import InList
from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import allocations, resource_classes, resource_providers

T = TypeVar("T")

# Amounts by resource class, and those by provider uuid.
Resources = Mapping[str, int]
ProviderResources = Mapping[str, Resources]


class GenerationRace(exceptions.ConcurrentUpdate):
    """Another writer changed a provider during this write; trying again may well succeed."""


class UnknownResourceClass(exceptions.InvalidInput):
    """An allocation names a resource class that does not exist."""


class AllocationRefused(exceptions.Conflict):
    """An allocation does not fit the provider's inventory."""


@dataclass(frozen=True, slots=True)
class Allocation:
    resource_provider_uuid: str
    resource_provider_generation: int
    consumer_uuid: str
    consumer_generation: int | None
    resource_class: str
    used: int
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def last_modified(self) -> dt.datetime:
        return self.updated_at or self.created_at


@dataclass(frozen=True, slots=True)
class Claim:
    """What one consumer's allocations are to become; empty ``allocations`` releases them all.

    ``generation`` is checked only when ``check_generation`` is set (from 1.28); None then means
    the client expects the consumer to be new. A ``consumer_type`` of None keeps the current one.
    """

    consumer_uuid: str
    allocations: ProviderResources
    project_id: str
    user_id: str
    consumer_type: str | None = None
    generation: int | None = None
    check_generation: bool = False


def _select() -> sa.Select[tuple[object, ...]]:
    rp, rc, a, c = resource_providers, resource_classes, allocations, schema.consumers
    return (
        sa.select(
            rp.c.uuid.label("resource_provider_uuid"),
            rp.c.generation.label("resource_provider_generation"),
            a.c.consumer_id.label("consumer_uuid"),
            c.c.generation.label("consumer_generation"),
            rc.c.name.label("resource_class"),
            a.c.used,
            a.c.created_at,
            a.c.updated_at,
        )
        .select_from(a)
        .join(rp, rp.c.id == a.c.resource_provider_id)
        .join(rc, rc.c.id == a.c.resource_class_id)
        .outerjoin(c, c.c.uuid == a.c.consumer_id)
        .order_by(rp.c.uuid, a.c.consumer_id, rc.c.name)
    )


def for_consumer(conn: Connection, consumer_uuid: str) -> tuple[Consumer | None, list[Allocation]]:
    """The consumer (None when unknown) and its allocations."""
    rows = conn.execute(_select().where(allocations.c.consumer_id == consumer_uuid))
    found = [Allocation(**row._asdict()) for row in rows]
    return consumers.find(conn, consumer_uuid), found


def for_provider(conn: Connection, provider: ResourceProvider) -> list[Allocation]:
    rows = conn.execute(_select().where(allocations.c.resource_provider_id == provider.id))
    return [Allocation(**row._asdict()) for row in rows]


def release(conn: Connection, consumer_uuid: str) -> None:
    """Remove all of a consumer's allocations, and the consumer with them.

    Provider generations stay: freeing resources cannot push anyone past capacity.
    """
    held = allocations.c.consumer_id == consumer_uuid
    changes.touch_usage(
        conn, conn.scalars(sa.select(allocations.c.resource_provider_id).where(held).distinct())
    )
    removed = conn.execute(allocations.delete().where(held))
    if removed.rowcount == 0:
        raise exceptions.NotFound(f"No allocations for consumer '{consumer_uuid}'")
    consumers.delete_unused(conn, [consumer_uuid])


def write_retrying(db: Database, attempts: int, work: Callable[[Connection], T]) -> T:
    """Run ``work`` in one write transaction, from the start again after a ``GenerationRace``.

    Deadlocks reported by the database are retried as well (``Database.write_with_retry``).
    """
    attempts = max(attempts, 1)
    for attempt in range(attempts):
        try:
            return db.write_with_retry(work)
        except GenerationRace:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def write(conn: Connection, claims: Sequence[Claim]) -> dict[str, int]:
    """Replace every claim's consumer's allocations, all of them or none; the new generation of
    each involved provider, by uuid."""
    ensured = [
        consumers.ensure(
            conn,
            claim.consumer_uuid,
            consumers.Owner(claim.project_id, claim.user_id, claim.consumer_type),
            claim.generation,
            claim.check_generation,
        )
        for claim in claims
    ]
    # A consumer this write created holds nothing yet: only the others' allocations go.
    existing = {consumer.uuid for consumer, created in ensured if not created}
    old = _rows_of(conn, existing)
    named = list(dict.fromkeys(uuid for claim in claims for uuid in claim.allocations))
    released = {
        row.provider_uuid
        for claim in claims
        if not claim.allocations
        for row in old
        if row.consumer_uuid == claim.consumer_uuid
    }
    locked = _advance_generations(conn, [*named, *sorted(released - set(named))])
    for uuid in named:
        if uuid not in locked:
            raise exceptions.InvalidInput(
                f"Allocation for resource provider '{uuid}' that does not exist."
            )
    wanted = {uuid: locked[uuid][0] for uuid in named}
    asked = {rc for claim in claims for res in claim.allocations.values() for rc in res}
    stock, before, class_ids = _stock(conn, sorted(set(wanted.values())), asked)
    if not asked <= class_ids.keys():
        class_ids = _class_ids(conn, asked)
    if existing:
        conn.execute(allocations.delete().where(allocations.c.consumer_id.in_(existing)))
    usage = dict(before)
    for row in old:
        if (row.provider_id, row.class_id) in usage:
            usage[row.provider_id, row.class_id] -= row.used
    _check(claims, wanted, class_ids, stock, usage, before)
    _insert(conn, claims, wanted, class_ids)
    changes.touch_usage(conn, (provider_id for provider_id, _ in locked.values()))
    for consumer, created in ensured:
        if not created:
            consumers.bump_generation(conn, consumer)
    # Only a consumer whose allocations were all taken away can be left without any.
    consumers.delete_unused(conn, [c.consumer_uuid for c in claims if not c.allocations])
    return {uuid: generation for uuid, (_, generation) in locked.items()}


@dataclass(frozen=True, slots=True)
class _Row:
    consumer_uuid: str
    provider_id: int
    provider_uuid: str
    class_id: int
    used: int


def _advance_statements() -> tuple[InList[sa.Update], InList[sa.Update], InList[sa.Select[Any]]]:
    rp = resource_providers

    def advance(named: sa.ColumnElement[bool]) -> sa.Update:
        return (
            rp.update()
            .where(named)
            .values(generation=rp.c.generation + 1, updated_at=sa.bindparam("now"))
        )

    return (
        InList(rp.c.uuid, advance, "uuids"),
        InList(
            rp.c.uuid,
            lambda named: advance(named).returning(rp.c.uuid, rp.c.id, rp.c.generation),
            "uuids",
        ),
        InList(rp.c.uuid, sa.select(rp.c.uuid, rp.c.id, rp.c.generation).where, "uuids"),
    )


# The statements of every claim, built once (building one costs more than running it).
_ADVANCE, _ADVANCE_RETURNING, _ADVANCED = _advance_statements()
_INSERT = allocations.insert()
_HELD_BY = InList(
    allocations.c.consumer_id,
    sa.select(
        allocations.c.consumer_id,
        allocations.c.resource_provider_id,
        resource_providers.c.uuid,
        allocations.c.resource_class_id,
        allocations.c.used,
    )
    .join(resource_providers, resource_providers.c.id == allocations.c.resource_provider_id)
    .where,
    "consumers",
)


def _advance_generations(conn: Connection, uuids: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Advance the generation of each existing provider of ``uuids``, locking its row until the
    transaction ends: (id, new generation) by uuid, the unknown ones left out. One statement
    where the database returns updated rows, two otherwise (MariaDB)."""
    if not uuids:
        return {}
    named = sorted(set(uuids))
    if conn.dialect.update_returning:
        rows = direct.execute(conn, *_ADVANCE_RETURNING(named, now=utcnow())).rows
    else:
        direct.execute(conn, *_ADVANCE(named, now=utcnow()))
        rows = direct.execute(conn, *_ADVANCED(named)).rows
    return {uuid: (int(id_), int(generation)) for uuid, id_, generation in rows}


def _class_ids(conn: Connection, names_: Collection[str]) -> dict[str, int]:
    known = names.resource_class_ids(conn, names_)
    for name in sorted(names_):
        if name not in known:
            raise UnknownResourceClass(f"No such resource class {name}.")
    return known


def _rows_of(conn: Connection, consumer_uuids: Collection[str]) -> list[_Row]:
    if not consumer_uuids:
        return []
    rows = direct.execute(conn, *_HELD_BY(sorted(set(consumer_uuids)))).rows
    return [_Row(*row) for row in rows]


@functools.cache
def _stock_statement(providers: int, classes: int) -> sa.Select[tuple[object, ...]]:
    """The stock of so many providers and classes, a plain parameter for each (``listed``:
    a claim names a few of each); the expanding parameters for longer lists."""
    inv, a, rc = schema.inventories, allocations, resource_classes
    used = (
        sa.select(sa.func.sum(a.c.used))
        .where(
            a.c.resource_provider_id == inv.c.resource_provider_id,
            a.c.resource_class_id == inv.c.resource_class_id,
        )
        .scalar_subquery()
    )
    if providers > listed.SHORT or classes > listed.SHORT:
        provider_in = inv.c.resource_provider_id.in_(sa.bindparam("providers", expanding=True))
        class_in = rc.c.name.in_(sa.bindparam("classes", expanding=True))
    else:
        provider_in = inv.c.resource_provider_id.in_(
            [sa.bindparam(f"provider_{i}") for i in range(providers)]
        )
        class_in = rc.c.name.in_([sa.bindparam(f"class_{i}") for i in range(classes)])
    return (
        sa.select(
            inv.c.resource_provider_id,
            inv.c.resource_class_id,
            *_STOCKED,
            rc.c.name.label("class_name"),
            used.label("used"),
        )
        .join(rc, rc.c.id == inv.c.resource_class_id)
        .where(provider_in, class_in)
    )


# The columns of an inventory row a claim checks against, in ``Inventory``'s order.
_STOCKED = [schema.inventories.c[field.name] for field in fields(Inventory)]


def _stock(
    conn: Connection, provider_ids: Sequence[int], class_names: Collection[str]
) -> tuple[dict[tuple[int, int], Inventory], dict[tuple[int, int], int], dict[str, int]]:
    """The inventory of each (provider id, class id) of these providers and classes that has
    one, the units allocated of each, and the ids of the classes found: one query."""
    if not provider_ids or not class_names:
        return {}, {}, {}
    classes = sorted(class_names)
    statement = _stock_statement(len(provider_ids), len(classes))
    params: dict[str, Any] = {"providers": list(provider_ids), "classes": classes}
    params |= {f"provider_{i}": provider_id for i, provider_id in enumerate(provider_ids)}
    params |= {f"class_{i}": name for i, name in enumerate(classes)}
    inventory, usage, class_ids = {}, {}, {}
    for provider_id, class_id, *stocked, class_name, used in direct.execute(
        conn, statement, params
    ).rows:
        key = (provider_id, class_id)
        inventory[key] = Inventory(*stocked)
        # int(): MySQL returns SUM as Decimal.
        usage[key] = int(used or 0)
        class_ids[class_name] = class_id
    return inventory, usage, class_ids


def _check(
    claims: Sequence[Claim],
    wanted: Mapping[str, int],
    class_ids: Mapping[str, int],
    inventory: Mapping[tuple[int, int], Inventory],
    usage: Mapping[tuple[int, int], int],
    before: Mapping[tuple[int, int], int],
) -> None:
    """Refuse the write unless every new amount fits its provider's inventory.

    Amounts of one provider and class from several claims add up. A provider already past its
    capacity (its inventory shrank) may keep its usage or lower it, never raise it.
    """
    stocked = {provider_id for provider_id, _ in inventory}
    for uuid, provider_id in wanted.items():
        if provider_id not in stocked:
            classes = ", ".join(sorted(class_ids))
            raise AllocationRefused(
                f"Inventory for '{classes}' on resource provider '{uuid}' invalid."
            )
    asked: dict[tuple[int, int], int] = {}
    for claim in claims:
        for uuid, resources in claim.allocations.items():
            for rc, amount in resources.items():
                key = (wanted[uuid], class_ids[rc])
                asked[key] = asked.get(key, 0) + amount
                stock = inventory.get(key)
                if stock is None:
                    raise AllocationRefused(
                        f"Inventory for '{rc}' on resource provider '{uuid}' invalid."
                    )
                refusal = capacity.fit(stock, amount, usage[key] + asked[key], before[key])
                if refusal:
                    raise AllocationRefused(
                        f"Unable to create allocation for '{rc}' on resource provider "
                        f"'{uuid}'. The requested amount would {refusal.value}."
                    )


def _insert(
    conn: Connection,
    claims: Sequence[Claim],
    wanted: Mapping[str, int],
    class_ids: Mapping[str, int],
) -> None:
    now = utcnow()
    rows = [
        (claim.consumer_uuid, wanted[uuid], class_ids[rc], amount, now)
        for claim in claims
        for uuid, resources in claim.allocations.items()
        for rc, amount in resources.items()
    ]
    if len(rows) > listed.SHORT:
        direct.execute(conn, _INSERT, [dict(zip(_INSERTED, row, strict=True)) for row in rows])
    elif rows:
        params = {
            f"{name}_{i}": value
            for i, row in enumerate(rows)
            for name, value in zip(_INSERTED, row, strict=True)
        }
        direct.execute(conn, _insert_statement(len(rows)), params)


_INSERTED = ("consumer_id", "resource_provider_id", "resource_class_id", "used", "created_at")


@functools.cache
def _insert_statement(rows: int) -> sa.Insert:
    """One ``INSERT`` of so many rows, a plain parameter for each value: one round trip where an
    executemany costs PostgreSQL's driver a pipeline (a claim writes a few rows)."""
    return allocations.insert().values(
        [
            {
                name: sa.bindparam(f"{name}_{i}", type_=allocations.c[name].type)
                for name in _INSERTED
            }
            for i in range(rows)
        ]
    )

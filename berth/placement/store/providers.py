"""Resource providers in the placement database: lookups, creation, renaming, moving within and
between trees, deletion, and the generation guard.

Every write that changes a provider (inventory, traits, aggregates, allocations, its own fields)
bumps its generation with a compare-and-swap, ``UPDATE ... WHERE generation = :seen``; zero rows
updated means someone else changed it first, and the write is refused with ``ConcurrentUpdate``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.store import changes, tree
from berth.placement.store.schema import (
    allocations,
    inventories,
    resource_provider_aggregates,
    resource_provider_traits,
    resource_providers,
)

_parent = resource_providers.alias("parent")
_root = resource_providers.alias("root")


@dataclass(frozen=True, slots=True)
class ResourceProvider:
    id: int
    uuid: str
    name: str
    generation: int
    parent_provider_uuid: str | None
    root_provider_uuid: str
    parent_provider_id: int | None
    root_provider_id: int
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def last_modified(self) -> dt.datetime:
        return self.updated_at or self.created_at


def select_providers() -> sa.Select[tuple[object, ...]]:
    """Providers with their parent's and root's uuids (``ResourceProvider`` rows)."""
    rp = resource_providers
    return (
        sa.select(
            rp.c.id,
            rp.c.uuid,
            rp.c.name,
            rp.c.generation,
            _parent.c.uuid.label("parent_provider_uuid"),
            _root.c.uuid.label("root_provider_uuid"),
            rp.c.parent_provider_id,
            rp.c.root_provider_id,
            rp.c.created_at,
            rp.c.updated_at,
        )
        .select_from(rp)
        .outerjoin(_parent, _parent.c.id == rp.c.parent_provider_id)
        .outerjoin(_root, _root.c.id == rp.c.root_provider_id)
    )


def _statements() -> tuple[sa.Select[tuple[object, ...]], sa.Select[tuple[object, ...]], sa.Update]:
    rp = resource_providers
    by_uuid = select_providers().where(rp.c.uuid == sa.bindparam("uuid"))
    # A new provider's parent and those that have its uuid or name, in one round trip.
    clashes = select_providers().where(
        sa.or_(
            rp.c.uuid == sa.bindparam("uuid"),
            rp.c.name == sa.bindparam("name"),
            rp.c.uuid == sa.bindparam("parent"),
        )
    )
    bump = (
        rp.update()
        .where(rp.c.id == sa.bindparam("provider"), rp.c.generation == sa.bindparam("seen"))
        .values(generation=sa.bindparam("next"), updated_at=sa.bindparam("now"))
    )
    return by_uuid, clashes, bump


# Built once, as every provider write runs them: building a statement and its cache key each
# time cost more than SQLite's own work on it.
_BY_UUID, _CLASHES, _BUMP = _statements()
_INSERT = resource_providers.insert()
_INSERT_RETURNING = _INSERT.returning(resource_providers.c.id)
_BUMP_MANY = (
    resource_providers.update()
    .where(resource_providers.c.id.in_(sa.bindparam("providers", expanding=True)))
    .values(generation=resource_providers.c.generation + 1, updated_at=sa.bindparam("now"))
)
_GENERATIONS = sa.select(resource_providers.c.id, resource_providers.c.generation).where(
    resource_providers.c.id.in_(sa.bindparam("providers", expanding=True))
)
_ROOT_OF_ITSELF = (
    resource_providers.update()
    .where(resource_providers.c.id == sa.bindparam("provider"))
    .values(root_provider_id=resource_providers.c.id)
)


def _from_row(row: sa.Row[tuple[object, ...]]) -> ResourceProvider:
    return ResourceProvider(**row._asdict())


def find(conn: Connection, uuid: str) -> ResourceProvider | None:
    rows = direct.execute(conn, _BY_UUID, {"uuid": uuid}).rows
    return ResourceProvider(*rows[0]) if rows else None


def get(conn: Connection, uuid: str) -> ResourceProvider:
    """The provider with this uuid; ``NotFound`` names the uuid when there is none."""
    provider = find(conn, uuid)
    if provider is None:
        raise exceptions.NotFound(
            f"No resource provider with uuid {uuid} found",
            code=errors.RESOURCE_PROVIDER_NOT_FOUND,
        )
    return provider


def bump_generation(conn: Connection, provider: ResourceProvider) -> int:
    """Advance the provider's generation for a change of the provider itself (inventory, traits,
    aggregates) if it is still the one ``provider`` was read with.

    Returns the new generation. Raises ``ConcurrentUpdate`` when another writer got there first.
    """
    updated = direct.execute(
        conn,
        _BUMP,
        {
            "provider": provider.id,
            "seen": provider.generation,
            "next": provider.generation + 1,
            "now": utcnow(),
        },
    )
    if updated.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            f"resource provider generation conflict: provider {provider.uuid} changed while "
            "this request was being processed. Please retry your update"
        )
    changes.touch(conn, [provider.id])
    return provider.generation + 1


def bump_generations(conn: Connection, bumped: Sequence[ResourceProvider]) -> list[int]:
    """``bump_generation`` for many providers in two statements: each advances by one, and if
    any was no longer at the generation it was read with (another writer got there first, or
    deleted it), ``ConcurrentUpdate`` and the caller's transaction rolls back. Their new
    generations, in order."""
    if len(bumped) == 1:
        return [bump_generation(conn, bumped[0])]
    ids = [provider.id for provider in bumped]
    conn.execute(_BUMP_MANY, {"providers": ids, "now": utcnow()})
    rows = conn.execute(_GENERATIONS, {"providers": ids})
    now = {provider_id: generation for provider_id, generation in rows}
    for provider in bumped:
        if now.get(provider.id) != provider.generation + 1:
            raise exceptions.ConcurrentUpdate(
                f"resource provider generation conflict: provider {provider.uuid} changed while "
                "this request was being processed. Please retry your update"
            )
    changes.touch(conn, ids)
    return [provider.generation + 1 for provider in bumped]


def find_many(conn: Connection, uuids: Iterable[str]) -> dict[str, ResourceProvider]:
    """The providers of ``uuids`` that exist, by uuid."""
    rows = conn.execute(select_providers().where(resource_providers.c.uuid.in_(sorted(set(uuids)))))
    return {row.uuid: _from_row(row) for row in rows}


def check_generation(provider: ResourceProvider, seen: int) -> None:
    """Refuse a write whose client read an older (or newer) generation than the current one."""
    if provider.generation != seen:
        raise exceptions.ConcurrentUpdate(
            f"resource provider generation conflict: provider {provider.uuid} is at generation "
            f"{provider.generation}, the request was made at {seen}. Please update the "
            "generation and try again."
        )


def require_generation(provider: ResourceProvider, seen: int) -> None:
    """``check_generation`` for the trait and aggregate writes, in the words clients match on."""
    if provider.generation != seen:
        raise exceptions.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update the generation and "
            "try again."
        )


def create(
    conn: Connection, uuid: str, name: str, parent_uuid: str | None = None
) -> ResourceProvider:
    """A new provider at generation 0: a root, or a child in its parent's tree."""
    refused = f'Unable to create resource provider "{name}", {uuid}'
    if parent_uuid == uuid:
        raise exceptions.InvalidInput(
            f"{refused}: parent provider UUID cannot be same as UUID. Please set parent "
            "provider UUID to None if there is no parent."
        )
    params = {"uuid": uuid, "name": name, "parent": parent_uuid}
    found = [ResourceProvider(*row) for row in direct.execute(conn, _CLASHES, params).rows]
    parent = None
    if parent_uuid is not None:
        parent = next((p for p in found if p.uuid == parent_uuid), None)
        if parent is None:
            raise exceptions.InvalidInput(f"{refused}: parent provider UUID does not exist.")
    _refuse_duplicates(uuid, name, found)
    row = {
        "uuid": uuid,
        "name": name,
        "generation": 0,
        "parent_provider_id": parent.id if parent else None,
        "root_provider_id": parent.root_provider_id if parent else None,
        "created_at": utcnow(),
    }
    try:
        if conn.dialect.insert_returning:
            new_id = direct.execute(conn, _INSERT_RETURNING, row).scalar()
        else:
            new_id = direct.execute(conn, _INSERT, row).lastrowid
    except IntegrityError:
        # Another request took the name or uuid since we looked.
        raise exceptions.DuplicateName(
            f"Conflicting resource provider uuid: {uuid}, name: {name} already exists."
        ) from None
    if parent is None:
        # A root is the root of its own tree, which needs its id first.
        direct.execute(conn, _ROOT_OF_ITSELF, {"provider": new_id})
    changes.touch(conn, [new_id])
    # What reading it back would give: every column is one written here (a fleet's
    # registration makes thousands, and the read was a sixth of each).
    return ResourceProvider(
        id=new_id,
        uuid=uuid,
        name=name,
        generation=0,
        parent_provider_uuid=parent.uuid if parent else None,
        root_provider_uuid=parent.root_provider_uuid if parent else uuid,
        parent_provider_id=parent.id if parent else None,
        root_provider_id=parent.root_provider_id if parent else new_id,
        created_at=row["created_at"],
        updated_at=None,
    )


def _refuse_duplicates(uuid: str, name: str, taken: Sequence[ResourceProvider]) -> None:
    clashes = []
    if any(row.uuid == uuid for row in taken):
        clashes.append(f"uuid: {uuid}")
    if any(row.name == name for row in taken):
        clashes.append(f"name: {name}")
    if clashes:
        raise exceptions.DuplicateName(
            f"Conflicting resource provider {', '.join(clashes)} already exists."
        )


def update(
    conn: Connection,
    provider: ResourceProvider,
    name: str,
    parent_uuid: str | None,
    *,
    allow_reparenting: bool = False,
) -> ResourceProvider:
    """Rename a provider and put it under ``parent_uuid`` (None: make it a root).

    Before 1.37 (``allow_reparenting`` False) a provider may only gain a parent it did not have.
    The generation does not change: it guards the provider's resources, not its name or place.
    """
    rp = resource_providers
    values: dict[str, object] = {"name": name, "updated_at": utcnow()}
    values |= _placement(conn, provider, parent_uuid, allow_reparenting)
    clash = conn.execute(
        sa.select(rp.c.id).where(rp.c.name == name, rp.c.id != provider.id)
    ).first()
    if clash is not None:
        raise exceptions.DuplicateName(f"Conflicting resource provider {name} already exists.")
    try:
        conn.execute(rp.update().where(rp.c.id == provider.id).values(**values))
    except IntegrityError:
        raise exceptions.DuplicateName(
            f"Conflicting resource provider {name} already exists."
        ) from None
    changes.touch(conn, [provider.id])
    new_root = values.get("root_provider_id")
    if new_root is not None and new_root != provider.root_provider_id:
        descendants = tree.descendant_ids(conn, provider.root_provider_id, provider.id)
        if descendants:
            conn.execute(
                rp.update().where(rp.c.id.in_(descendants)).values(root_provider_id=new_root)
            )
            changes.touch(conn, descendants)
    return get(conn, provider.uuid)


def _placement(
    conn: Connection, provider: ResourceProvider, parent_uuid: str | None, allow_reparenting: bool
) -> dict[str, object]:
    """The parent and root columns that put ``provider`` under ``parent_uuid`` (None: a root)."""
    refused = f"Unable to save resource provider {provider.uuid}"
    if parent_uuid is None:
        if provider.parent_provider_id is None:
            return {}
        if not allow_reparenting:
            raise exceptions.InvalidInput(
                f"{refused}: un-parenting a provider is not currently allowed."
            )
        return {"parent_provider_id": None, "root_provider_id": provider.id}
    parent = find(conn, parent_uuid)
    if parent is None:
        raise exceptions.InvalidInput(f"{refused}: parent provider UUID does not exist.")
    if parent.id == provider.parent_provider_id:
        return {}
    if provider.parent_provider_id is not None and not allow_reparenting:
        raise exceptions.InvalidInput(
            f"{refused}: re-parenting a provider is not currently allowed."
        )
    if parent.id == provider.id or parent.id in tree.descendant_ids(
        conn, provider.root_provider_id, provider.id
    ):
        raise exceptions.InvalidInput(
            f"{refused}: creating loop in the provider tree is not allowed."
        )
    return {"parent_provider_id": parent.id, "root_provider_id": parent.root_provider_id}


def delete(conn: Connection, uuid: str) -> None:
    """Remove a provider with its inventory, traits and aggregate links.

    A provider with children or with allocations against it stays.
    """
    provider = find(conn, uuid)
    if provider is None:
        raise exceptions.NotFound(f"No resource provider with uuid {uuid} found for delete")
    rp = resource_providers
    cannot_delete_parent = exceptions.CannotDeleteParent(
        f"Unable to delete parent resource provider {uuid}: It has child resource providers."
    )
    if conn.execute(sa.select(rp.c.id).where(rp.c.parent_provider_id == provider.id)).first():
        raise cannot_delete_parent
    in_use = conn.execute(
        sa.select(allocations.c.id).where(allocations.c.resource_provider_id == provider.id)
    ).first()
    if in_use is not None:
        raise exceptions.ProviderInUse(
            f"Unable to delete resource provider {uuid}: Resource provider has allocations."
        )
    for table in (inventories, resource_provider_aggregates, resource_provider_traits):
        conn.execute(table.delete().where(table.c.resource_provider_id == provider.id))
    # The row names itself as its root; cut that first so no database refuses the delete.
    conn.execute(rp.update().where(rp.c.id == provider.id).values(root_provider_id=None))
    changes.touch(conn, [provider.id])
    try:
        conn.execute(rp.delete().where(rp.c.id == provider.id))
    except IntegrityError:
        # A child was attached since we looked.
        raise cannot_delete_parent from None

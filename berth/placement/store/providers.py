"""Resource providers in the placement database: lookups and the generation guard.

Every write that changes a provider (inventory, traits, aggregates, allocations, its own fields)
bumps its generation with a compare-and-swap, ``UPDATE ... WHERE generation = :seen``; zero rows
updated means someone else changed it first, and the write is refused with ``ConcurrentUpdate``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.store.schema import resource_providers

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


def _select() -> sa.Select[tuple[object, ...]]:
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


def _from_row(row: sa.Row[tuple[object, ...]]) -> ResourceProvider:
    return ResourceProvider(**row._asdict())


def find(conn: Connection, uuid: str) -> ResourceProvider | None:
    row = conn.execute(_select().where(resource_providers.c.uuid == uuid)).first()
    return _from_row(row) if row is not None else None


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
    """Advance the provider's generation if it is still the one ``provider`` was read with.

    Returns the new generation. Raises ``ConcurrentUpdate`` when another writer got there first.
    """
    rp = resource_providers
    updated = conn.execute(
        rp.update()
        .where(rp.c.id == provider.id, rp.c.generation == provider.generation)
        .values(generation=provider.generation + 1, updated_at=utcnow())
    )
    if updated.rowcount != 1:
        raise exceptions.ConcurrentUpdate(
            f"resource provider generation conflict: provider {provider.uuid} changed while "
            "this request was being processed. Please retry your update"
        )
    return provider.generation + 1


def check_generation(provider: ResourceProvider, seen: int) -> None:
    """Refuse a write whose client read an older (or newer) generation than the current one."""
    if provider.generation != seen:
        raise exceptions.ConcurrentUpdate(
            f"resource provider generation conflict: provider {provider.uuid} is at generation "
            f"{provider.generation}, the request was made at {seen}. Please update the "
            "generation and try again."
        )

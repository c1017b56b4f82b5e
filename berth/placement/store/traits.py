"""Traits: the standard ones from os-traits and custom ``CUSTOM_*`` ones, and providers' traits."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.placement import exceptions
from berth.placement.store import changes, providers
from berth.placement.store.links import replace_links
from berth.placement.store.listed import InList
from berth.placement.store.names import NamedRecord
from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import resource_provider_traits, traits

CUSTOM_PREFIX = "CUSTOM_"


class Trait(NamedRecord):
    """A trait, standard or custom."""


def _select() -> sa.Select[tuple[object, ...]]:
    t = traits
    return sa.select(t.c.id, t.c.name, t.c.created_at, t.c.updated_at).order_by(t.c.id)


def _from_rows(rows: Iterable[sa.Row[tuple[object, ...]]]) -> list[Trait]:
    return [Trait(**row._asdict()) for row in rows]


def _named_and_linked() -> InList[sa.CompoundSelect[Any]]:
    """Traits by name (``wanted`` 1) and, in the same round trip, the ids of a provider's traits
    (``wanted`` 0, the other columns null)."""
    t, link = traits, resource_provider_traits
    named = sa.select(t.c.id, t.c.name, t.c.created_at, t.c.updated_at, sa.literal_column("1"))
    linked = sa.select(
        link.c.trait_id, sa.null(), sa.null(), sa.null(), sa.literal_column("0")
    ).where(link.c.resource_provider_id == sa.bindparam("provider"))
    return InList(t.c.name, lambda among: sa.union_all(named.where(among), linked), "names")


# Built once: a provider's traits are set by name on every registration.
_BY_NAME = _select().where(traits.c.name == sa.bindparam("name"))
_BY_NAMES = InList(traits.c.name, _select().where, "names")
_NAMED_AND_LINKED = _named_and_linked()


def find(conn: Connection, name: str) -> Trait | None:
    found = _from_rows(conn.execute(_BY_NAME, {"name": name}))
    return found[0] if found else None


def get(conn: Connection, name: str) -> Trait:
    trait = find(conn, name)
    if trait is None:
        raise exceptions.NotFound(f"No such trait(s): {name}.")
    return trait


def list_traits(
    conn: Connection,
    names: Iterable[str] | None = None,
    prefix: str | None = None,
    associated: bool | None = None,
) -> list[Trait]:
    """Traits, oldest first, narrowed by exact names, a name prefix, and whether any provider
    has them."""
    t, link = traits, resource_provider_traits
    if names is not None and prefix is None and associated is None:
        return _from_rows(conn.execute(*_BY_NAMES(sorted(set(names)))))
    query = _select()
    if names is not None:
        query = query.where(t.c.name.in_(sorted(set(names))))
    if prefix is not None:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(t.c.name.like(escaped + "%", escape="\\"))
    if associated is not None:
        used = sa.exists().where(link.c.trait_id == t.c.id)
        query = query.where(used if associated else ~used)
    return _from_rows(conn.execute(query))


def ensure(conn: Connection, name: str) -> tuple[Trait, bool]:
    """The trait with this name, created if missing; the flag says whether it was created."""
    existing = find(conn, name)
    if existing is not None:
        return existing, False
    try:
        with conn.begin_nested():
            conn.execute(traits.insert().values(name=name, created_at=utcnow()))
    except IntegrityError:
        # Another request created it first: that is the same outcome for the caller.
        return get(conn, name), False
    changes.touch_names(conn)
    return get(conn, name), True


def delete(conn: Connection, name: str) -> None:
    """Delete a custom trait no provider has."""
    trait = get(conn, name)
    if not name.startswith(CUSTOM_PREFIX):
        raise exceptions.InvalidInput(f"Cannot delete standard trait {name}.")
    link = resource_provider_traits
    if conn.execute(sa.select(link.c.trait_id).where(link.c.trait_id == trait.id)).first():
        raise exceptions.Conflict(f"The trait {name} is in use by a resource provider.")
    conn.execute(traits.delete().where(traits.c.id == trait.id))
    changes.touch_names(conn)


def of_provider(conn: Connection, provider_id: int) -> list[Trait]:
    link = resource_provider_traits
    query = _select().join(link, link.c.trait_id == traits.c.id)
    return _from_rows(conn.execute(query.where(link.c.resource_provider_id == provider_id)))


def replace_on_provider(
    conn: Connection, provider: ResourceProvider, names: Collection[str]
) -> tuple[list[Trait], int]:
    """Make ``names`` exactly the provider's traits; the generation moves only if they change.

    Returns the traits and the provider's generation. Any trait that does not exist is refused
    by name.
    """
    rows = direct.execute(conn, *_NAMED_AND_LINKED(sorted(set(names)), provider=provider.id)).rows
    wanted = sorted((Trait(*row[:4]) for row in rows if row[4]), key=lambda trait: trait.id)
    linked = {row[0] for row in rows if not row[4]}
    missing = set(names) - {t.name for t in wanted}
    if missing:
        raise exceptions.InvalidInput(f"No such trait {', '.join(sorted(missing))}")
    wanted_ids = {t.id for t in wanted}
    table = resource_provider_traits
    if not replace_links(conn, table, "trait_id", provider.id, wanted_ids, current=linked):
        return wanted, provider.generation
    return wanted, providers.bump_generation(conn, provider)

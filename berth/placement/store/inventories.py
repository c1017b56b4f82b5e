"""Providers' inventories: read them, and replace, add, update or delete them under the generation.

Every change bumps the provider's generation in the same transaction. Inventory that has
allocations against it cannot be removed (``InventoryInUse``); it may shrink below what is
allocated, as upstream allows, and the provider then only refuses new allocations of that class.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.capacity import Inventory
from berth.placement.store import names, providers
from berth.placement.store.listed import InList
from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import allocations, inventories, resource_classes

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, slots=True)
class StoredInventory:
    resource_class: str
    inventory: Inventory
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def last_modified(self) -> dt.datetime:
        return self.updated_at or self.created_at


class UnknownResourceClass(exceptions.InvalidInput):
    """Inventory names a resource class that does not exist."""


class NoSuchInventory(exceptions.NotFound):
    """The provider has no inventory of that class."""


def inventory_of(row: Any) -> Inventory:
    """The inventory an ``inventories`` row holds."""
    return Inventory(
        total=row.total,
        reserved=row.reserved,
        min_unit=row.min_unit,
        max_unit=row.max_unit,
        step_size=row.step_size,
        allocation_ratio=row.allocation_ratio,
    )


def for_provider(conn: Connection, provider: ResourceProvider) -> dict[str, StoredInventory]:
    inv, rc = inventories, resource_classes
    rows = conn.execute(
        sa.select(rc.c.name, inv)
        .join(rc, rc.c.id == inv.c.resource_class_id)
        .where(inv.c.resource_provider_id == provider.id)
        .order_by(rc.c.name)
    )
    return {
        row.name: StoredInventory(
            resource_class=row.name,
            inventory=inventory_of(row),
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        for row in rows
    }


def replace(
    conn: Connection,
    provider: ResourceProvider,
    wanted: Mapping[str, Inventory],
    *,
    keep_unlisted: bool = False,
) -> ResourceProvider:
    """Make the provider's inventory exactly ``wanted`` and bump its generation.

    With ``keep_unlisted`` classes that ``wanted`` does not name stay (the reshaper's interim
    step). Removing a class with allocations raises ``InventoryInUse``. Returns the provider at
    its new generation.
    """
    return replace_many(conn, [(provider, wanted)], keep_unlisted=keep_unlisted)[0]


def replace_many(
    conn: Connection,
    stocks: Sequence[tuple[ResourceProvider, Mapping[str, Inventory]]],
    *,
    keep_unlisted: bool = False,
) -> list[ResourceProvider]:
    """``replace`` for several providers, in a fixed number of statements however many there
    are (the reshaper writes hundreds of new providers' inventories at once): the same rows,
    generations and errors as replacing them one after the other. The providers at their new
    generations, in order."""
    if not stocks:
        return []
    class_ids = _class_ids(conn, {rc: inv for _, wanted in stocks for rc, inv in wanted.items()})
    held = _held(conn, [provider for provider, _ in stocks])
    gone = {
        provider.id: {held[provider.id][rc] for rc in held[provider.id].keys() - wanted.keys()}
        for provider, wanted in stocks
        if not keep_unlisted and held[provider.id].keys() - wanted.keys()
    }
    if gone:
        _refuse_in_use(conn, [p for p, _ in stocks if p.id in gone], gone)
        _delete(conn, gone)
    now = utcnow()
    new_rows: list[dict[str, Any]] = []
    changed_rows: list[dict[str, Any]] = []
    for provider, wanted in stocks:
        for rc, inventory in wanted.items():
            key = {"b_provider": provider.id, "b_class": class_ids[rc]}
            if rc in held[provider.id]:
                changed_rows.append({**key, "updated_at": now, **inventory.fields()})
            else:
                new_rows.append({**key, "created_at": now, **inventory.fields()})
    _write(conn, new_rows, changed_rows)
    # Only inventory held before can have allocations against it (none can be made without
    # it, and it cannot be removed while they last): a new provider's needs no look.
    _warn_if_overused(conn, [(p, wanted) for p, wanted in stocks if held[p.id].keys() & wanted])
    generations = providers.bump_generations(conn, [provider for provider, _ in stocks])
    return [
        dataclasses.replace(provider, generation=generation)
        for (provider, _), generation in zip(stocks, generations, strict=True)
    ]


def add(conn: Connection, provider: ResourceProvider, rc: str, inventory: Inventory) -> int:
    """Add inventory of a class the provider does not have yet; returns the new generation."""
    class_ids = _class_ids(conn, {rc: inventory})
    if rc in _held(conn, [provider])[provider.id]:
        raise exceptions.ConcurrentUpdate(
            f"Update conflict: inventory of class {rc} already exists on resource provider "
            f"{provider.uuid}"
        )
    row = {"b_provider": provider.id, "b_class": class_ids[rc], "created_at": utcnow()}
    _write(conn, [row | inventory.fields()], [])
    return _bumped(conn, provider).generation


def update(conn: Connection, provider: ResourceProvider, rc: str, inventory: Inventory) -> int:
    """Change the provider's existing inventory of one class; returns the new generation."""
    held = _held(conn, [provider])[provider.id]
    if rc not in held:
        raise NoSuchInventory(
            f"No inventory record with resource class for resource provider {provider.uuid}: "
            f"no inventory of class {rc}"
        )
    row = {"b_provider": provider.id, "b_class": held[rc], "updated_at": utcnow()}
    _write(conn, [], [row | inventory.fields()])
    _warn_if_overused(conn, [(provider, {rc: inventory})])
    return _bumped(conn, provider).generation


def delete(conn: Connection, provider: ResourceProvider, rc: str) -> None:
    """Remove the provider's inventory of one class, unless it has allocations."""
    held = _held(conn, [provider])[provider.id]
    if rc not in held:
        raise NoSuchInventory(
            f"No inventory of class {rc} found for delete on resource provider {provider.uuid}"
        )
    gone = {provider.id: {held[rc]}}
    _refuse_in_use(conn, [provider], gone, code=errors.CONCURRENT_UPDATE)
    _delete(conn, gone)
    _bumped(conn, provider)


def _class_ids(conn: Connection, wanted: Mapping[str, Inventory]) -> dict[str, int]:
    class_ids = names.resource_class_ids(conn, wanted)
    unknown = sorted(set(wanted) - set(class_ids))
    if unknown:
        raise UnknownResourceClass(f"No such resource class {', '.join(unknown)}.")
    return class_ids


def _statements() -> tuple[InList[sa.Select[Any]], InList[sa.Select[Any]]]:
    inv, rc, a = inventories, resource_classes, allocations
    held = sa.select(inv.c.resource_provider_id, rc.c.name, rc.c.id).join(
        inv, inv.c.resource_class_id == rc.c.id
    )
    used = sa.select(a.c.resource_provider_id, rc.c.name, sa.func.sum(a.c.used)).join(
        rc, rc.c.id == a.c.resource_class_id
    )
    return (
        InList(inv.c.resource_provider_id, held.where, "providers"),
        InList(
            a.c.resource_provider_id,
            lambda among: used.where(among).group_by(a.c.resource_provider_id, rc.c.name),
            "providers",
        ),
    )


# Built once, as every inventory write runs them (see ``providers``).
_HELD, _USED = _statements()


def _held(conn: Connection, held_by: Sequence[ResourceProvider]) -> dict[int, dict[str, int]]:
    """Per provider id, the classes it has inventory of, by name, with their ids."""
    held: dict[int, dict[str, int]] = {provider.id: {} for provider in held_by}
    rows = direct.execute(conn, *_HELD(list(held))).rows
    for provider_id, name, id_ in rows:
        held[provider_id][name] = id_
    return held


_KEY = (
    inventories.c.resource_provider_id == sa.bindparam("b_provider"),
    inventories.c.resource_class_id == sa.bindparam("b_class"),
)
_INSERT = inventories.insert().values(
    resource_provider_id=sa.bindparam("b_provider"), resource_class_id=sa.bindparam("b_class")
)
_UPDATE = inventories.update().where(*_KEY)


def _write(
    conn: Connection, new_rows: Sequence[dict[str, Any]], changed_rows: Sequence[dict[str, Any]]
) -> None:
    """Insert ``new_rows`` and update ``changed_rows``, each keyed by ``b_provider`` and
    ``b_class``, one executemany each."""
    if new_rows:
        direct.execute(conn, _INSERT, list(new_rows))
    if changed_rows:
        direct.execute(conn, _UPDATE, list(changed_rows))


def _delete(conn: Connection, class_ids: Mapping[int, set[int]]) -> None:
    """Remove each provider's inventories of the given classes."""
    rows = [
        {"b_provider": provider_id, "b_class": class_id}
        for provider_id, ids in class_ids.items()
        for class_id in ids
    ]
    conn.execute(inventories.delete().where(*_KEY), rows)


def _refuse_in_use(
    conn: Connection,
    checked: Sequence[ResourceProvider],
    class_ids: Mapping[int, set[int]],
    code: str = errors.INVENTORY_INUSE,
) -> None:
    """Raise ``InventoryInUse`` for the first of ``checked`` with allocations of its classes."""
    a, rc = allocations, resource_classes
    rows = conn.execute(
        sa.select(a.c.resource_provider_id, rc.c.id, rc.c.name)
        .join(a, a.c.resource_class_id == rc.c.id)
        .where(
            a.c.resource_provider_id.in_(list(class_ids)),
            a.c.resource_class_id.in_({i for ids in class_ids.values() for i in ids}),
        )
        .group_by(a.c.resource_provider_id, rc.c.id, rc.c.name)
        .order_by(rc.c.id)
    )
    in_use: dict[int, list[str]] = {}
    for provider_id, class_id, name in rows:
        if class_id in class_ids[provider_id]:
            in_use.setdefault(provider_id, []).append(name)
    for provider in checked:
        if provider.id in in_use:
            raise exceptions.InventoryInUse(
                f"Inventory for '{', '.join(in_use[provider.id])}' on resource provider "
                f"'{provider.uuid}' in use.",
                code=code,
            )


def _warn_if_overused(
    conn: Connection, stocks: Sequence[tuple[ResourceProvider, Mapping[str, Inventory]]]
) -> None:
    """Shrinking below usage is allowed, but an operator should hear about it."""
    if not stocks:
        return
    wanted = {provider.id: (provider, stock) for provider, stock in stocks}
    rows = direct.execute(conn, *_USED(list(wanted))).rows
    for provider_id, name, used in rows:
        provider, stock = wanted[provider_id]
        if name in stock and used > stock[name].capacity:
            LOG.warning(
                "resource provider %s now has %s %s allocated, past its capacity of %s",
                provider.uuid,
                used,
                name,
                stock[name].capacity,
            )


def _bumped(conn: Connection, provider: ResourceProvider) -> ResourceProvider:
    return dataclasses.replace(provider, generation=providers.bump_generation(conn, provider))

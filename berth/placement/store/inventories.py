"""Providers' inventories: read them, and replace, add, update or delete them under the generation.

Every change bumps the provider's generation in the same transaction. Inventory that has
allocations against it cannot be removed (``InventoryInUse``); it may shrink below what is
allocated, as upstream allows, and the provider then only refuses new allocations of that class.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.capacity import Inventory
from berth.placement.store import names, providers
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
    class_ids = _class_ids(conn, wanted)
    held = _held(conn, provider)
    gone = set() if keep_unlisted else set(held) - set(wanted)
    if gone:
        _refuse_in_use(conn, provider, {held[rc] for rc in gone})
        _delete(conn, provider, {held[rc] for rc in gone})
    for rc, inventory in wanted.items():
        _write(conn, provider, class_ids[rc], inventory, exists=rc in held)
    _warn_if_overused(conn, provider, wanted)
    return _bumped(conn, provider)


def add(conn: Connection, provider: ResourceProvider, rc: str, inventory: Inventory) -> int:
    """Add inventory of a class the provider does not have yet; returns the new generation."""
    class_ids = _class_ids(conn, {rc: inventory})
    if rc in _held(conn, provider):
        raise exceptions.ConcurrentUpdate(
            f"Update conflict: inventory of class {rc} already exists on resource provider "
            f"{provider.uuid}"
        )
    _write(conn, provider, class_ids[rc], inventory, exists=False)
    return _bumped(conn, provider).generation


def update(conn: Connection, provider: ResourceProvider, rc: str, inventory: Inventory) -> int:
    """Change the provider's existing inventory of one class; returns the new generation."""
    held = _held(conn, provider)
    if rc not in held:
        raise NoSuchInventory(
            f"No inventory record with resource class for resource provider {provider.uuid}: "
            f"no inventory of class {rc}"
        )
    _write(conn, provider, held[rc], inventory, exists=True)
    _warn_if_overused(conn, provider, {rc: inventory})
    return _bumped(conn, provider).generation


def delete(conn: Connection, provider: ResourceProvider, rc: str) -> None:
    """Remove the provider's inventory of one class, unless it has allocations."""
    held = _held(conn, provider)
    if rc not in held:
        raise NoSuchInventory(
            f"No inventory of class {rc} found for delete on resource provider {provider.uuid}"
        )
    _refuse_in_use(conn, provider, {held[rc]}, code=errors.CONCURRENT_UPDATE)
    _delete(conn, provider, {held[rc]})
    _bumped(conn, provider)


def _class_ids(conn: Connection, wanted: Mapping[str, Inventory]) -> dict[str, int]:
    class_ids = names.resource_class_ids(conn, wanted)
    unknown = sorted(set(wanted) - set(class_ids))
    if unknown:
        raise UnknownResourceClass(f"No such resource class {', '.join(unknown)}.")
    return class_ids


def _held(conn: Connection, provider: ResourceProvider) -> dict[str, int]:
    """The classes the provider has inventory of, by name, with their ids."""
    inv, rc = inventories, resource_classes
    rows = conn.execute(
        sa.select(rc.c.name, rc.c.id)
        .join(inv, inv.c.resource_class_id == rc.c.id)
        .where(inv.c.resource_provider_id == provider.id)
    )
    return {name: id_ for name, id_ in rows}


def _write(
    conn: Connection, provider: ResourceProvider, class_id: int, inventory: Inventory, exists: bool
) -> None:
    inv = inventories
    now = utcnow()
    if exists:
        conn.execute(
            inv.update()
            .where(inv.c.resource_provider_id == provider.id, inv.c.resource_class_id == class_id)
            .values(updated_at=now, **inventory.fields())
        )
    else:
        conn.execute(
            inv.insert().values(
                resource_provider_id=provider.id,
                resource_class_id=class_id,
                created_at=now,
                **inventory.fields(),
            )
        )


def _delete(conn: Connection, provider: ResourceProvider, class_ids: set[int]) -> None:
    inv = inventories
    conn.execute(
        inv.delete().where(
            inv.c.resource_provider_id == provider.id, inv.c.resource_class_id.in_(class_ids)
        )
    )


def _refuse_in_use(
    conn: Connection,
    provider: ResourceProvider,
    class_ids: set[int],
    code: str = errors.INVENTORY_INUSE,
) -> None:
    a, rc = allocations, resource_classes
    in_use = conn.scalars(
        sa.select(rc.c.name)
        .join(a, a.c.resource_class_id == rc.c.id)
        .where(a.c.resource_provider_id == provider.id, a.c.resource_class_id.in_(class_ids))
        .group_by(rc.c.id, rc.c.name)
        .order_by(rc.c.id)
    ).all()
    if in_use:
        raise exceptions.InventoryInUse(
            f"Inventory for '{', '.join(in_use)}' on resource provider '{provider.uuid}' in use.",
            code=code,
        )


def _warn_if_overused(
    conn: Connection, provider: ResourceProvider, wanted: Mapping[str, Inventory]
) -> None:
    """Shrinking below usage is allowed, but an operator should hear about it."""
    a, rc = allocations, resource_classes
    rows = conn.execute(
        sa.select(rc.c.name, sa.func.sum(a.c.used))
        .join(rc, rc.c.id == a.c.resource_class_id)
        .where(a.c.resource_provider_id == provider.id, rc.c.name.in_(list(wanted)))
        .group_by(rc.c.name)
    )
    for name, used in rows:
        if used > wanted[name].capacity:
            LOG.warning(
                "resource provider %s now has %s %s allocated, past its capacity of %s",
                provider.uuid,
                used,
                name,
                wanted[name].capacity,
            )


def _bumped(conn: Connection, provider: ResourceProvider) -> ResourceProvider:
    return dataclasses.replace(provider, generation=providers.bump_generation(conn, provider))

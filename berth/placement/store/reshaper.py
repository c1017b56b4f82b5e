"""The reshaper: several providers' inventories and several consumers' allocations replaced in
one transaction, as when a class of inventory moves from a compute node to a new child provider.

Inventory in use cannot be removed and allocations cannot land on inventory that is not there
yet, so the inventory changes in two steps around the allocation write: first each provider gets
its current inventory updated with the new (nothing removed), then the allocations are replaced
(``allocations.write``, which refuses any that do not fit), then each provider gets exactly its
new inventory. In between a provider may hold less than is allocated from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.store import allocations, names, providers
from berth.placement.store.allocations import Claim
from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import allocations as allocation_rows
from berth.placement.store.schema import inventories as inventory_rows
from berth.placement.store.schema import resource_classes


class ProviderGenerationConflict(exceptions.ConcurrentUpdate):
    """The client reshapes a provider at another generation than its current one."""


@dataclass(frozen=True, slots=True)
class Stock:
    """One resource class's inventory on a provider."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float


@dataclass(frozen=True, slots=True)
class NewInventory:
    """A provider's complete new inventory and the generation the client saw it at."""

    generation: int
    stock: Mapping[str, Stock]


def reshape(
    conn: Connection, inventories: Mapping[str, NewInventory], claims: Sequence[Claim]
) -> None:
    """Replace the providers' inventories and the claims' consumers' allocations, all or none."""
    # Read first and check the generations the client saw: see ``allocations`` on why the
    # providers are read before any inventory or usage.
    moving: dict[str, ResourceProvider] = {}
    for uuid, new in inventories.items():
        provider = providers.find(conn, uuid)
        if provider is None:
            raise exceptions.InvalidInput(
                f"Resource provider {uuid} in inventories not found: No resource provider with "
                f"uuid {uuid} found",
                code=errors.RESOURCE_PROVIDER_NOT_FOUND,
            )
        if provider.generation != new.generation:
            raise ProviderGenerationConflict(
                f"resource provider generation conflict for provider {uuid}: "
                f"actual: {provider.generation}, given: {new.generation}"
            )
        moving[uuid] = provider
    class_ids = names.resource_class_ids(conn, [rc for i in inventories.values() for rc in i.stock])
    for new in inventories.values():
        for rc in new.stock:
            if rc not in class_ids:
                raise allocations.UnknownResourceClass(f"No such resource class {rc}.")
    for uuid, new in inventories.items():
        if new.stock:
            moving[uuid] = _set_inventory(conn, moving[uuid], new.stock, class_ids, interim=True)
    bumped = allocations.write(conn, claims, seen=moving)
    moving.update((uuid, p) for uuid, p in bumped.items() if uuid in moving)
    for uuid, new in inventories.items():
        _set_inventory(conn, moving[uuid], new.stock, class_ids, interim=False)


def _set_inventory(
    conn: Connection,
    provider: ResourceProvider,
    stock: Mapping[str, Stock],
    class_ids: Mapping[str, int],
    interim: bool,
) -> ResourceProvider:
    """Write the provider's inventory and bump its generation.

    ``interim`` keeps classes that ``stock`` does not name; otherwise they go, unless in use.
    """
    inv = inventory_rows
    held = set(
        conn.scalars(
            sa.select(inv.c.resource_class_id).where(inv.c.resource_provider_id == provider.id)
        )
    )
    wanted = {class_ids[rc]: values for rc, values in stock.items()}
    gone = set() if interim else held - wanted.keys()
    if gone:
        _refuse_in_use(conn, provider, gone)
        conn.execute(
            inv.delete().where(
                inv.c.resource_provider_id == provider.id, inv.c.resource_class_id.in_(gone)
            )
        )
    now = utcnow()
    for class_id, values in wanted.items():
        fields = {
            "total": values.total,
            "reserved": values.reserved,
            "min_unit": values.min_unit,
            "max_unit": values.max_unit,
            "step_size": values.step_size,
            "allocation_ratio": values.allocation_ratio,
        }
        if class_id in held:
            conn.execute(
                inv.update()
                .where(
                    inv.c.resource_provider_id == provider.id, inv.c.resource_class_id == class_id
                )
                .values(updated_at=now, **fields)
            )
        else:
            conn.execute(
                inv.insert().values(
                    resource_provider_id=provider.id,
                    resource_class_id=class_id,
                    created_at=now,
                    **fields,
                )
            )
    try:
        generation = providers.bump_generation(conn, provider)
    except exceptions.ConcurrentUpdate as exc:
        raise allocations.GenerationRace(str(exc)) from None
    return replace(provider, generation=generation)


def _refuse_in_use(conn: Connection, provider: ResourceProvider, class_ids: set[int]) -> None:
    a, rc = allocation_rows, resource_classes
    in_use = conn.scalars(
        sa.select(rc.c.name)
        .join(a, a.c.resource_class_id == rc.c.id)
        .where(a.c.resource_provider_id == provider.id, a.c.resource_class_id.in_(class_ids))
        .group_by(rc.c.name)
        .order_by(rc.c.name)
    ).all()
    if in_use:
        raise exceptions.InventoryInUse(
            f"Inventory for '{', '.join(in_use)}' on resource provider '{provider.uuid}' in use."
        )

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

from sqlalchemy.engine import Connection

from berth.placement import errors, exceptions
from berth.placement.capacity import Inventory
from berth.placement.store import allocations, names, providers
from berth.placement.store import inventories as inventories_store
from berth.placement.store.allocations import Claim
from berth.placement.store.providers import ResourceProvider


class ProviderGenerationConflict(exceptions.ConcurrentUpdate):
    """The client reshapes a provider at another generation than its current one."""


@dataclass(frozen=True, slots=True)
class NewInventory:
    """A provider's complete new inventory and the generation the client saw it at."""

    generation: int
    stock: Mapping[str, Inventory]


def reshape(
    conn: Connection, inventories: Mapping[str, NewInventory], claims: Sequence[Claim]
) -> None:
    """Replace the providers' inventories and the claims' consumers' allocations, all or none."""
    # Read first and check the generations the client saw: see ``allocations`` on why the
    # providers are read before any inventory or usage.
    moving = providers.find_many(conn, inventories)
    for uuid, new in inventories.items():
        provider = moving.get(uuid)
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
    class_ids = names.resource_class_ids(conn, [rc for i in inventories.values() for rc in i.stock])
    for new in inventories.values():
        for rc in new.stock:
            if rc not in class_ids:
                raise allocations.UnknownResourceClass(f"No such resource class {rc}.")
    stocked = [uuid for uuid, new in inventories.items() if new.stock]
    if claims:
        interim = [(moving[uuid], inventories[uuid].stock) for uuid in stocked]
        moving |= zip(stocked, _replace(conn, interim, keep_unlisted=True), strict=True)
    else:
        # Nothing is allocated between the steps, so the interim inventory would only be
        # written over (a fleet's new providers, 500 a request): the final step alone leaves
        # the same rows, and the providers take the generation the interim step gives.
        moving |= zip(stocked, _bump(conn, [moving[uuid] for uuid in stocked]), strict=True)
    bumped = allocations.write(conn, claims)
    final = [
        (replace(moving[uuid], generation=bumped.get(uuid, moving[uuid].generation)), new.stock)
        for uuid, new in inventories.items()
    ]
    _replace(conn, final, keep_unlisted=False)


def _replace(
    conn: Connection,
    stocks: Sequence[tuple[ResourceProvider, Mapping[str, Inventory]]],
    *,
    keep_unlisted: bool,
) -> list[ResourceProvider]:
    """Write the providers' inventories; losing the generation race is a retryable race here."""
    try:
        return inventories_store.replace_many(conn, stocks, keep_unlisted=keep_unlisted)
    except exceptions.ConcurrentUpdate as exc:
        raise allocations.GenerationRace(str(exc)) from None


def _bump(conn: Connection, bumped: Sequence[ResourceProvider]) -> list[ResourceProvider]:
    """The providers a generation on, as ``_replace`` leaves them, with no inventory written."""
    if not bumped:
        return []
    try:
        generations = providers.bump_generations(conn, bumped)
    except exceptions.ConcurrentUpdate as exc:
        raise allocations.GenerationRace(str(exc)) from None
    return [replace(p, generation=g) for p, g in zip(bumped, generations, strict=True)]

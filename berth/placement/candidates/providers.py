"""The filter of ``GET /resource_providers``: each provider must meet every filter by itself."""

from __future__ import annotations

import itertools

from berth.placement.candidates.request import ProviderFilters
from berth.placement.candidates.snapshot import Provider, Snapshot
from berth.placement.exceptions import InvalidInput

_NO_TRAIT = 'Invalid trait(s) in "required" parameter: No such trait(s): '


def _check_names(names: set[str], known: frozenset[str], message: str) -> None:
    unknown = sorted(names - known)
    if unknown:
        raise InvalidInput(message + ", ".join(unknown) + ".")


def matching_providers(snapshot: Snapshot, filters: ProviderFilters) -> list[Provider]:
    """Providers in id order. Names are checked in upstream's order, so an ``in_tree`` naming
    no provider, or required traits no provider has, give an empty list before an unknown
    resource class is noticed."""
    if filters.in_tree is not None and filters.in_tree not in snapshot.providers:
        return []
    _check_names(set(itertools.chain(*filters.required)), snapshot.traits, _NO_TRAIT)
    candidates = list(snapshot.providers.values())
    if filters.required:
        candidates = [p for p in candidates if all(s & p.traits for s in filters.required)]
        if not candidates:
            return []
    _check_names(set(filters.forbidden), snapshot.traits, _NO_TRAIT)
    if filters.member_of:
        in_aggs = snapshot.in_aggregates(filters.member_of)
        if not in_aggs:
            return []
        candidates = [p for p in candidates if p.uuid in in_aggs]
    for rc in filters.resources:
        if rc not in snapshot.resource_classes:
            raise InvalidInput(
                f"Invalid resource class in resources parameter: No such resource class {rc}."
            )
    tree_root = snapshot.root_of(filters.in_tree) if filters.in_tree else None
    return [
        p
        for p in candidates
        if (filters.name is None or p.name == filters.name)
        and (filters.uuid is None or p.uuid == filters.uuid)
        and (tree_root is None or p.root_uuid == tree_root)
        and not filters.forbidden & p.traits
        and not filters.forbidden_aggs & p.aggregates
        and all(
            rc in p.inventories and p.inventories[rc].fits(n) for rc, n in filters.resources.items()
        )
    ]

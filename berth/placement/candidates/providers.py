"""The filter of ``GET /resource_providers``: each provider must meet every filter by itself."""

from __future__ import annotations

import itertools

import numpy as np

from berth.placement.candidates.index import ProviderIndex, Rows
from berth.placement.candidates.request import ProviderFilters
from berth.placement.exceptions import InvalidInput

_NO_TRAIT = 'Invalid trait(s) in "required" parameter: No such trait(s): '


def _check_names(names: set[str], known: frozenset[str], message: str) -> None:
    unknown = sorted(names - known)
    if unknown:
        raise InvalidInput(message + ", ".join(unknown) + ".")


def matching_providers(index: ProviderIndex, filters: ProviderFilters) -> Rows:
    """Rows in id order. Names are checked in upstream's order, so an ``in_tree`` naming no
    provider, or required traits no provider has, give an empty list before an unknown
    resource class is noticed."""
    nothing = np.empty(0, np.int64)
    tree_row = None if filters.in_tree is None else index.row(filters.in_tree)
    if filters.in_tree is not None and tree_row is None:
        return nothing
    _check_names(set(itertools.chain(*filters.required)), index.traits, _NO_TRAIT)
    found = index.with_traits(filters.required)
    if filters.required and not found.any():
        return nothing
    _check_names(set(filters.forbidden), index.traits, _NO_TRAIT)
    if filters.member_of:
        in_aggs = index.in_aggregates(filters.member_of)
        if not in_aggs.any():
            return nothing
        found &= in_aggs
    for rc in filters.resources:
        if rc not in index.resource_classes:
            raise InvalidInput(
                f"Invalid resource class in resources parameter: No such resource class {rc}."
            )
    if tree_row is not None:
        found &= index.root == index.root_of(tree_row)
    found &= ~index.with_any_trait(filters.forbidden)
    found &= ~index.in_any_aggregate(filters.forbidden_aggs)
    for rc, amount in filters.resources.items():
        found &= index.fitting(rc, amount)
    if filters.uuid is not None:
        row = index.row(filters.uuid)
        found &= index.mask(np.asarray([] if row is None else [row], np.int64))
    rows = np.flatnonzero(found)
    if filters.name is not None:
        rows = rows[[index.names[row] == filters.name for row in rows.tolist()]]
    return rows

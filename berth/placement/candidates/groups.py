"""Per-group work done once per request, vectorised over the index: which providers may serve
each group, under which anchors.

An *anchor* is the root of the tree a candidate is built around. A provider serves a group under
its own root, and a sharing provider (``MISC_SHARES_VIA_AGGREGATE``) also under the root of every
provider that shares an aggregate with it. Names are checked here, group by group in request
order, and a group that can match nothing stops the search at once (``NoCandidates``): this is
why an unknown trait in a later group yields an empty answer rather than a 400, as upstream.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from berth.placement.candidates.index import Mask, ProviderIndex, Rows
from berth.placement.candidates.request import CandidatesRequest, RequestGroup
from berth.placement.exceptions import InvalidInput


class NoCandidates(Exception):
    """Some filter matches nothing, so the whole answer is empty."""


class Slot(NamedTuple):
    """One choice in the search under one anchor: a provider for one class of the unnamed group
    (``rc`` set), or one provider for a whole suffixed group (``rc`` None). A tuple, because the
    search makes one per slot per anchor it visits."""

    suffix: str
    rc: str | None
    resources: tuple[tuple[str, int], ...]
    options: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SlotOptions:
    """One slot's options under every anchor: (anchor, row) pairs sorted by anchor, then row."""

    suffix: str
    rc: str | None
    resources: tuple[tuple[str, int], ...]
    anchors: Rows
    rows: Rows

    @classmethod
    def of_pairs(
        cls,
        group: RequestGroup,
        rc: str | None,
        resources: tuple[tuple[str, int], ...],
        anchors: Rows,
        rows: Rows,
    ) -> SlotOptions:
        order = np.lexsort((rows, anchors))
        return cls(group.suffix, rc, resources, anchors[order], rows[order])

    def served(self) -> Rows:
        return np.unique(self.anchors)

    def at(self, anchor: int) -> tuple[int, ...]:
        lo, hi = np.searchsorted(self.anchors, [anchor, anchor + 1])
        return tuple(self.rows[lo:hi].tolist())


@dataclass(frozen=True, slots=True)
class GroupTable:
    """One group's slots, and the anchors (sorted) under which every slot has an option."""

    slots: tuple[SlotOptions, ...]
    anchors: Rows


def check_trait_names(index: ProviderIndex, names: Iterable[str]) -> None:
    unknown = sorted(set(names) - index.traits)
    if unknown:
        raise InvalidInput(f"No such trait(s): {', '.join(unknown)}.")


def check_class_names(index: ProviderIndex, names: Iterable[str]) -> None:
    for name in names:
        if name not in index.resource_classes:
            raise InvalidInput(
                f"Invalid resource class in resources parameter: No such resource class {name}."
            )


def anchor_roots(index: ProviderIndex, request: CandidatesRequest) -> Mask | None:
    """Roots allowed by ``root_required`` (1.35), as a row mask, or None when it is not given."""
    if not (request.root_required or request.root_forbidden):
        return None
    check_trait_names(index, request.root_required)
    check_trait_names(index, request.root_forbidden)
    allowed = index.mask(index.roots())
    allowed &= index.with_traits(frozenset({t}) for t in request.root_required)
    allowed &= ~index.with_any_trait(request.root_forbidden)
    if not allowed.any():
        raise NoCandidates
    return allowed


def _with_capacity(index: ProviderIndex, group: RequestGroup) -> dict[str, Mask]:
    """Rows able to give each class its amount, checked in upstream's order."""
    check_class_names(index, group.resources)
    if group.member_of and not index.in_aggregates(group.member_of).any():
        raise NoCandidates
    check_trait_names(index, itertools.chain(*group.required))
    check_trait_names(index, group.forbidden)
    in_tree: Mask | None = None
    if group.in_tree is not None:
        row = index.row(group.in_tree)
        if row is None:
            raise NoCandidates
        in_tree = index.root == index.root_of(row)
    capable: dict[str, Mask] = {}
    for rc, amount in group.resources.items():
        capable[rc] = index.fitting(rc, amount)
        if in_tree is not None:
            capable[rc] &= in_tree
        if not capable[rc].any():
            raise NoCandidates
    return capable


def _shared_pairs(
    index: ProviderIndex, rows: Rows, anchor_ok: Mask | None
) -> tuple[list[Rows], list[Rows]]:
    """(anchors, rows) pairs for the sharing providers among ``rows``, beyond their own root."""
    anchors, served = [], []
    for row in np.intersect1d(rows, index.sharing()).tolist():
        extra = index.sharing_anchors(row)
        extra = extra[extra != index.root_of(row)]
        if anchor_ok is not None:
            extra = extra[anchor_ok[extra]]
        anchors.append(extra)
        served.append(np.full(len(extra), row, np.int64))
    return anchors, served


def single_provider_table(
    index: ProviderIndex, group: RequestGroup, allowed: Mask | None
) -> GroupTable:
    """A suffixed group: one provider meeting every resource, trait and aggregate rule."""
    capable = _with_capacity(index, group)
    # A resourceless group ignores in_tree (upstream applies in_tree only with resources).
    fitting = index.in_aggregates(group.member_of)
    for mask in capable.values():
        fitting &= mask
    fitting &= ~index.in_any_aggregate(group.forbidden_aggs)
    fitting &= ~index.with_any_trait(group.forbidden)
    fitting &= index.with_traits(group.required)
    rows = np.flatnonzero(fitting)
    own = index.root[rows]
    if allowed is not None:
        keep = allowed[own]
        own_pairs = (own[keep], rows[keep])
    else:
        own_pairs = (own, rows)
    more_anchors, more_rows = _shared_pairs(index, rows, allowed)
    anchors = np.concatenate([own_pairs[0], *more_anchors])
    if not len(anchors):
        raise NoCandidates
    options = SlotOptions.of_pairs(
        group,
        None,
        tuple(group.resources.items()),
        anchors,
        np.concatenate([own_pairs[1], *more_rows]),
    )
    return GroupTable((options,), options.served())


def spread_table(index: ProviderIndex, group: RequestGroup, allowed: Mask | None) -> GroupTable:
    """The unnamed group: each class from one provider of the anchor's tree or a sharing
    provider serving that tree. Aggregates count on the provider or on the anchor root;
    forbidden traits count on each provider used; required traits on them all together."""
    capable = _with_capacity(index, group)
    in_aggs = index.in_aggregates(group.member_of) if group.member_of else None
    bad = index.in_any_aggregate(group.forbidden_aggs)
    usable = ~bad & ~index.with_any_trait(group.forbidden)
    anchor_ok = ~bad if allowed is None else ~bad & allowed
    slots = []
    for rc, mask in capable.items():
        rows = np.flatnonzero(mask & usable)
        own = index.root[rows]
        keep = anchor_ok[own]
        if in_aggs is not None:
            keep &= in_aggs[rows] | in_aggs[own]
        more_anchors, more_rows = [], []
        # Sharing is not considered when in_tree pins the group to one tree.
        if group.in_tree is None:
            sharers = rows if in_aggs is None else rows[in_aggs[rows]]
            more_anchors, more_rows = _shared_pairs(index, sharers, anchor_ok)
        slots.append(
            SlotOptions.of_pairs(
                group,
                rc,
                ((rc, group.resources[rc]),),
                np.concatenate([own[keep], *more_anchors]),
                np.concatenate([rows[keep], *more_rows]),
            )
        )
    common = _intersect(slot.served() for slot in slots)
    if group.required:
        common = _first_with_traits(index, slots, common, group.required)
    return GroupTable(tuple(slots), common)


def _intersect(arrays: Iterable[Rows]) -> Rows:
    result: Rows | None = None
    for array in arrays:
        result = array if result is None else np.intersect1d(result, array, assume_unique=True)
    return result if result is not None else np.empty(0, np.int64)


def _first_with_traits(
    index: ProviderIndex,
    slots: list[SlotOptions],
    common: Rows,
    required: tuple[frozenset[str], ...],
) -> Rows:
    """Narrow ``common`` to anchors where, for each any-of set, some option has one of its
    traits (necessary), and make sure at least one anchor has a combination of options that
    has them all together (sufficient). The search checks each anchor exactly as it goes."""
    for any_of in required:
        has = index.with_any_trait(any_of)
        covered = _union(slot.anchors[has[slot.rows]] for slot in slots)
        common = np.intersect1d(common, covered, assume_unique=True)
    for anchor in common.tolist():
        options = [slot.at(anchor) for slot in slots]
        if any(
            has_traits(frozenset().union(*(index.traits_of(r) for r in combo)), required)
            for combo in itertools.product(*options)
        ):
            return common
    raise NoCandidates


def _union(arrays: Iterable[Rows]) -> Rows:
    return np.unique(np.concatenate([np.empty(0, np.int64), *arrays]))


def has_traits(traits: frozenset[str], required: tuple[frozenset[str], ...]) -> bool:
    return all(any_of & traits for any_of in required)


def group_tables(
    index: ProviderIndex, request: CandidatesRequest, allowed: Mask | None
) -> list[GroupTable]:
    """Every group's table, in request order, stopping at the first that matches nothing."""
    tables = []
    for group in request.groups:
        table = (
            single_provider_table(index, group, allowed)
            if group.use_same_provider
            else spread_table(index, group, allowed)
        )
        if not len(table.anchors):
            raise NoCandidates
        tables.append(table)
    return tables

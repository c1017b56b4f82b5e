"""Per-group work done once per slice of trees (``slices``), vectorised over its rows: which
providers may serve each group, under which anchors.

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

import numpy as np

from berth.placement.candidates.index import Mask, Rows
from berth.placement.candidates.request import CandidatesRequest, RequestGroup
from berth.placement.candidates.slices import TreeSlice
from berth.placement.exceptions import InvalidInput


class NoCandidates(Exception):
    """Some filter matches nothing, so the whole answer is empty."""


@dataclass(frozen=True, slots=True)
class SlotOptions:
    """One slot's options under every anchor, as masks over rows: the providers that may serve
    it in their own tree (``own``), and each sharing provider with the other trees it may serve
    there (``shared``). ``served`` marks the anchors with at least one option."""

    suffix: str
    rc: str | None
    resources: tuple[tuple[str, int], ...]
    own: Mask
    shared: tuple[tuple[int, Mask], ...]
    served: Mask

    @classmethod
    def of(
        cls,
        trees: TreeSlice,
        group: RequestGroup,
        rc: str | None,
        own: Mask,
        shared: list[tuple[int, Mask]],
    ) -> SlotOptions:
        served = trees.mask(trees.root[own])
        for _, anchors in shared:
            served |= anchors
        resources = ((rc, group.resources[rc]),) if rc else tuple(group.resources.items())
        return cls(group.suffix, rc, resources, own, tuple(shared), served)

    def gather(self, trees: TreeSlice, anchors: Rows) -> list[tuple[int, ...]]:
        """Each anchor's options, as rows of the whole index, in row order."""
        rows, begins, ends = trees.tree_rows(anchors)
        keep = self.own[rows]
        kept = trees.rows[rows[keep]].tolist()
        counted = np.concatenate([np.zeros(1, np.int64), np.cumsum(keep)])
        found = [
            tuple(kept[b:e])
            for b, e in zip(counted[begins].tolist(), counted[ends].tolist(), strict=True)
        ]
        for row, served in self.shared:
            whole_row = int(trees.rows[row])
            for i in np.flatnonzero(served[anchors]).tolist():
                found[i] = tuple(sorted((*found[i], whole_row)))
        return found


@dataclass(frozen=True, slots=True)
class GroupTable:
    """One group's slots, and the anchors under which every slot has an option."""

    slots: tuple[SlotOptions, ...]
    anchors: Mask


def check_trait_names(trees: TreeSlice, names: Iterable[str]) -> None:
    unknown = sorted(set(names) - trees.traits)
    if unknown:
        raise InvalidInput(f"No such trait(s): {', '.join(unknown)}.")


def check_class_names(trees: TreeSlice, names: Iterable[str]) -> None:
    for name in names:
        if name not in trees.resource_classes:
            raise InvalidInput(
                f"Invalid resource class in resources parameter: No such resource class {name}."
            )


def anchor_roots(trees: TreeSlice, request: CandidatesRequest) -> Mask | None:
    """Roots allowed by ``root_required`` (1.35), as a row mask, or None when it is not given."""
    if not (request.root_required or request.root_forbidden):
        return None
    check_trait_names(trees, request.root_required)
    check_trait_names(trees, request.root_forbidden)
    allowed = trees.mask(trees.roots())
    allowed &= trees.with_traits(frozenset({t}) for t in request.root_required)
    allowed &= ~trees.with_any_trait(request.root_forbidden)
    if not allowed.any():
        raise NoCandidates
    return allowed


def _with_capacity(trees: TreeSlice, group: RequestGroup) -> dict[str, Mask]:
    """Rows able to give each class its amount, checked in upstream's order."""
    check_class_names(trees, group.resources)
    if group.member_of and not trees.in_aggregates(group.member_of).any():
        raise NoCandidates
    check_trait_names(trees, itertools.chain(*group.required))
    check_trait_names(trees, group.forbidden)
    in_tree: Mask | None = None
    if group.in_tree is not None:
        in_tree = trees.tree_mask(group.in_tree)
        if in_tree is None:
            raise NoCandidates
    capable: dict[str, Mask] = {}
    for rc, amount in group.resources.items():
        capable[rc] = trees.fitting(rc, amount)
        if in_tree is not None:
            capable[rc] &= in_tree
        if not capable[rc].any():
            raise NoCandidates
    return capable


def _shared(trees: TreeSlice, rows: Mask, anchor_ok: Mask) -> list[tuple[int, Mask]]:
    """Each sharing provider among ``rows`` with the other trees it may serve."""
    return [
        (row, trees.sharing_anchor_mask(row) & anchor_ok)
        for row in trees.sharing()[rows[trees.sharing()]].tolist()
    ]


def single_provider_table(
    trees: TreeSlice, group: RequestGroup, allowed: Mask | None
) -> GroupTable:
    """A suffixed group: one provider meeting every resource, trait and aggregate rule."""
    capable = _with_capacity(trees, group)
    # A resourceless group ignores in_tree (upstream applies in_tree only with resources).
    fitting = trees.in_aggregates(group.member_of)
    for mask in capable.values():
        fitting &= mask
    fitting &= ~trees.in_any_aggregate(group.forbidden_aggs)
    fitting &= ~trees.with_any_trait(group.forbidden)
    fitting &= trees.with_traits(group.required)
    anchor_ok = trees.alive if allowed is None else allowed
    own = fitting & anchor_ok[trees.root]
    options = SlotOptions.of(trees, group, None, own, _shared(trees, fitting, anchor_ok))
    if not options.served.any():
        raise NoCandidates
    return GroupTable((options,), options.served)


def spread_table(trees: TreeSlice, group: RequestGroup, allowed: Mask | None) -> GroupTable:
    """The unnamed group: each class from one provider of the anchor's tree or a sharing
    provider serving that tree. Aggregates count on the provider or on the anchor root;
    forbidden traits count on each provider used; required traits on them all together."""
    capable = _with_capacity(trees, group)
    in_aggs = trees.in_aggregates(group.member_of) if group.member_of else None
    bad = trees.in_any_aggregate(group.forbidden_aggs)
    usable = ~bad & ~trees.with_any_trait(group.forbidden)
    anchor_ok = ~bad if allowed is None else ~bad & allowed
    slots = []
    for rc, mask in capable.items():
        rows = mask & usable
        own = rows & anchor_ok[trees.root]
        if in_aggs is not None:
            own &= in_aggs | in_aggs[trees.root]
        shared = []
        # Sharing is not considered when in_tree pins the group to one tree.
        if group.in_tree is None:
            shared = _shared(trees, rows if in_aggs is None else rows & in_aggs, anchor_ok)
        slots.append(SlotOptions.of(trees, group, rc, own, shared))
    common = np.logical_and.reduce([slot.served for slot in slots])
    if group.required:
        common = _with_traits_somewhere(trees, slots, common, group.required)
    return GroupTable(tuple(slots), common)


def _with_traits_somewhere(
    trees: TreeSlice,
    slots: list[SlotOptions],
    common: Mask,
    required: tuple[frozenset[str], ...],
) -> Mask:
    """Narrow ``common`` to anchors where, for each any-of set, some option has one of its
    traits (necessary), and make sure at least one anchor has a combination of options that
    has them all together (sufficient). The search checks each anchor exactly as it goes."""
    for any_of in required:
        has = trees.with_any_trait(any_of)
        covered = np.zeros(trees.size, np.bool_)
        for slot in slots:
            covered[trees.root[slot.own & has]] = True
            for row, served in slot.shared:
                if has[row]:
                    covered |= served
        common = common & covered
    anchors = np.flatnonzero(common)
    traits_of = trees.whole.traits_of
    for start in range(0, len(anchors), 64):
        chunk = anchors[start : start + 64]
        per_slot = [slot.gather(trees, chunk) for slot in slots]
        for options in zip(*per_slot, strict=True):
            if any(
                has_traits(frozenset().union(*(traits_of(r) for r in combo)), required)
                for combo in itertools.product(*options)
            ):
                return common
    raise NoCandidates


def has_traits(traits: frozenset[str], required: tuple[frozenset[str], ...]) -> bool:
    return all(any_of & traits for any_of in required)


def group_tables(
    trees: TreeSlice, request: CandidatesRequest, allowed: Mask | None
) -> list[GroupTable]:
    """Every group's table, in request order, stopping at the first that matches nothing."""
    tables = []
    for group in request.groups:
        table = (
            single_provider_table(trees, group, allowed)
            if group.use_same_provider
            else spread_table(trees, group, allowed)
        )
        if not table.anchors.any():
            raise NoCandidates
        tables.append(table)
    return tables

"""Per-group work done once per request: which providers may serve each group, by anchor.

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

from berth.placement.candidates.request import CandidatesRequest, RequestGroup
from berth.placement.candidates.snapshot import Snapshot
from berth.placement.exceptions import InvalidInput


class NoCandidates(Exception):
    """Some filter matches nothing, so the whole answer is empty."""


@dataclass(frozen=True, slots=True)
class Slot:
    """One choice in the search: a provider for one class of the unnamed group (``rc`` set),
    or one provider for a whole suffixed group (``rc`` None)."""

    suffix: str
    rc: str | None
    resources: tuple[tuple[str, int], ...]
    options: tuple[str, ...]


# anchor root uuid -> the slots of one group under that anchor
GroupTable = dict[str, list[Slot]]


def check_trait_names(snapshot: Snapshot, names: Iterable[str]) -> None:
    unknown = sorted(set(names) - snapshot.traits)
    if unknown:
        raise InvalidInput(f"No such trait(s): {', '.join(unknown)}.")


def check_class_names(snapshot: Snapshot, names: Iterable[str]) -> None:
    for name in names:
        if name not in snapshot.resource_classes:
            raise InvalidInput(
                f"Invalid resource class in resources parameter: No such resource class {name}."
            )


def anchor_roots(snapshot: Snapshot, request: CandidatesRequest) -> set[str] | None:
    """Roots allowed by ``root_required`` (1.35), or None when it is not given."""
    if not (request.root_required or request.root_forbidden):
        return None
    check_trait_names(snapshot, request.root_required)
    check_trait_names(snapshot, request.root_forbidden)
    roots = {
        uuid
        for uuid in snapshot.roots()
        if request.root_required <= snapshot.providers[uuid].traits
        and not request.root_forbidden & snapshot.providers[uuid].traits
    }
    if not roots:
        raise NoCandidates
    return roots


def _has_traits(traits: frozenset[str], required: tuple[frozenset[str], ...]) -> bool:
    return all(any_of & traits for any_of in required)


def _with_capacity(snapshot: Snapshot, group: RequestGroup) -> dict[str, list[str]]:
    """Providers able to give each class its amount, checked in upstream's order."""
    check_class_names(snapshot, group.resources)
    in_aggs = snapshot.in_aggregates(group.member_of) if group.member_of else None
    if in_aggs is not None and not in_aggs:
        raise NoCandidates
    check_trait_names(snapshot, itertools.chain(*group.required))
    check_trait_names(snapshot, group.forbidden)
    tree_root = None
    if group.in_tree is not None:
        if group.in_tree not in snapshot.providers:
            raise NoCandidates
        tree_root = snapshot.root_of(group.in_tree)
    capable: dict[str, list[str]] = {}
    for rc, amount in group.resources.items():
        capable[rc] = [
            p.uuid
            for p in snapshot.providers.values()
            if rc in p.inventories
            and p.inventories[rc].fits(amount)
            and (tree_root is None or p.root_uuid == tree_root)
        ]
        if not capable[rc]:
            raise NoCandidates
    return capable


def single_provider_table(
    snapshot: Snapshot, group: RequestGroup, anchors: set[str] | None
) -> GroupTable:
    """A suffixed group: one provider meeting every resource, trait and aggregate rule."""
    capable = _with_capacity(snapshot, group)
    in_aggs = snapshot.in_aggregates(group.member_of)
    bad_aggs = snapshot.in_aggregates([group.forbidden_aggs]) if group.forbidden_aggs else set()
    # A resourceless group ignores in_tree (upstream applies in_tree only with resources).
    fitting = set(snapshot.providers).intersection(*capable.values())
    options: dict[str, list[str]] = {}
    for p in snapshot.providers.values():
        if (
            p.uuid not in fitting
            or p.uuid not in in_aggs
            or p.uuid in bad_aggs
            or group.forbidden & p.traits
            or not _has_traits(p.traits, group.required)
        ):
            continue
        served = {p.root_uuid}
        if p.is_sharing:
            served |= snapshot.sharing_anchors(p.uuid)
        for anchor in served:
            if anchors is None or anchor in anchors:
                options.setdefault(anchor, []).append(p.uuid)
    if not options:
        raise NoCandidates
    resources = tuple(group.resources.items())
    return {
        anchor: [Slot(group.suffix, None, resources, tuple(options[anchor]))]
        for anchor in snapshot.roots()
        if anchor in options
    }


def spread_table(snapshot: Snapshot, group: RequestGroup, anchors: set[str] | None) -> GroupTable:
    """The unnamed group: each class from one provider of the anchor's tree or a sharing
    provider serving that tree. Aggregates count on the provider or on the anchor root;
    forbidden traits count on each provider used; required traits on them all together."""
    capable = _with_capacity(snapshot, group)
    in_aggs = snapshot.in_aggregates(group.member_of) if group.member_of else None
    bad_aggs = snapshot.in_aggregates([group.forbidden_aggs]) if group.forbidden_aggs else set()
    per_rc: dict[str, dict[str, list[str]]] = {}
    for rc, providers in capable.items():
        pairs: dict[str, list[str]] = {}
        for uuid in providers:
            p = snapshot.providers[uuid]
            served = {p.root_uuid}
            # Sharing is not considered when in_tree pins the group to one tree.
            if group.in_tree is None and p.is_sharing and (in_aggs is None or uuid in in_aggs):
                served |= snapshot.sharing_anchors(uuid)
            for anchor in served:
                if anchors is not None and anchor not in anchors:
                    continue
                if in_aggs is not None and uuid not in in_aggs and anchor not in in_aggs:
                    continue
                if uuid in bad_aggs or anchor in bad_aggs or group.forbidden & p.traits:
                    continue
                pairs.setdefault(anchor, []).append(uuid)
        per_rc[rc] = pairs
    common = set.intersection(*(set(pairs) for pairs in per_rc.values()))
    table: GroupTable = {}
    for anchor in (root for root in snapshot.roots() if root in common):
        slots = [
            Slot(group.suffix, rc, ((rc, group.resources[rc]),), tuple(per_rc[rc][anchor]))
            for rc in group.resources
        ]
        if _any_combination_has_traits(snapshot, slots, group.required):
            table[anchor] = slots
    if not table:
        raise NoCandidates
    return table


def _any_combination_has_traits(
    snapshot: Snapshot, slots: list[Slot], required: tuple[frozenset[str], ...]
) -> bool:
    if not required:
        return True
    # Cheap necessary test first: the union over every option must already suffice.
    everything = frozenset().union(
        *(snapshot.providers[u].traits for s in slots for u in s.options)
    )
    if not _has_traits(everything, required):
        return False
    return any(
        _has_traits(frozenset().union(*(snapshot.providers[u].traits for u in combo)), required)
        for combo in itertools.product(*(s.options for s in slots))
    )


def group_tables(
    snapshot: Snapshot, request: CandidatesRequest, anchors: set[str] | None
) -> list[GroupTable]:
    """Every group's table, in request order, stopping at the first that matches nothing."""
    return [
        single_provider_table(snapshot, g, anchors)
        if g.use_same_provider
        else spread_table(snapshot, g, anchors)
        for g in request.groups
    ]

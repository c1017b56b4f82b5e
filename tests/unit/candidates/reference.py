"""A slow, obviously correct allocation candidate solver, to check the fast one against.

Brute force: for every root as anchor, try every provider for every class of the unnamed group
and for every suffixed group, keep the assignments that break no rule, and dedupe. Each rule is
written out once, as a plain statement about one assignment; nothing is shared with solver.py.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from berth.placement.candidates.index import SHARING_TRAIT, Provider, ProviderIndex
from berth.placement.candidates.request import CandidatesRequest, RequestGroup


@dataclass(frozen=True)
class World:
    """The same providers twice: plain records for the reference, an index for the engine."""

    providers: dict[str, Provider]
    index: ProviderIndex

    @classmethod
    def build(
        cls, providers: Iterable[Provider], classes: Iterable[str], traits: Iterable[str]
    ) -> World:
        providers = list(providers)
        return cls({p.uuid: p for p in providers}, ProviderIndex.build(providers, classes, traits))

    @property
    def has_trees(self) -> bool:
        return any(p.parent_uuid for p in self.providers.values())


Key = tuple[frozenset[tuple[str, str, int]], frozenset[tuple[str, tuple[str, ...]]]]


def _fits(snap: World, uuid: str, rc: str, amount: int) -> bool:
    inv = snap.providers[uuid].inventories.get(rc)
    if inv is None:
        return False
    capacity = int((inv.total - inv.reserved) * inv.allocation_ratio)
    return (
        inv.used + amount <= capacity
        and inv.min_unit <= amount <= inv.max_unit
        and amount % inv.step_size == 0
    )


def _in_member_of(snap: World, uuid: str, group: RequestGroup) -> bool:
    aggs = snap.providers[uuid].aggregates
    return all(aggs & any_of for any_of in group.member_of)


def _in_forbidden_agg(snap: World, uuid: str, group: RequestGroup) -> bool:
    return bool(snap.providers[uuid].aggregates & group.forbidden_aggs)


def _shares_with_tree(snap: World, uuid: str, anchor: str) -> bool:
    sp = snap.providers[uuid]
    if SHARING_TRAIT not in sp.traits:
        return False
    return any(
        q.root_uuid == anchor and q.aggregates & sp.aggregates for q in snap.providers.values()
    )


def _tree_ok(snap: World, uuid: str, group: RequestGroup) -> bool:
    if group.in_tree is None:
        return True
    return snap.providers[uuid].root_uuid == snap.providers[group.in_tree].root_uuid


def _unnamed_ok(snap: World, group: RequestGroup, anchor: str, picks: dict[str, str]) -> bool:
    for rc, uuid in picks.items():
        p = snap.providers[uuid]
        if not _fits(snap, uuid, rc, group.resources[rc]) or not _tree_ok(snap, uuid, group):
            return False
        in_tree_of_anchor = p.root_uuid == anchor
        via_sharing = (
            group.in_tree is None
            and _shares_with_tree(snap, uuid, anchor)
            and _in_member_of(snap, uuid, group)
        )
        if not (in_tree_of_anchor or via_sharing):
            return False
        if group.member_of and not (
            _in_member_of(snap, uuid, group) or _in_member_of(snap, anchor, group)
        ):
            return False
        if _in_forbidden_agg(snap, uuid, group) or _in_forbidden_agg(snap, anchor, group):
            return False
        if p.traits & group.forbidden:
            return False
    together = set().union(*(snap.providers[u].traits for u in picks.values()))
    return all(together & any_of for any_of in group.required)


def _suffixed_ok(snap: World, group: RequestGroup, anchor: str, uuid: str) -> bool:
    p = snap.providers[uuid]
    if group.resources and not _tree_ok(snap, uuid, group):
        return False
    if not all(_fits(snap, uuid, rc, n) for rc, n in group.resources.items()):
        return False
    if not all(p.traits & any_of for any_of in group.required) or p.traits & group.forbidden:
        return False
    if not _in_member_of(snap, uuid, group) or _in_forbidden_agg(snap, uuid, group):
        return False
    return p.root_uuid == anchor or _shares_with_tree(snap, uuid, anchor)


def _same_subtree_ok(snap: World, uuids: set[str]) -> bool:
    def under(child: str, top: str) -> bool:
        node: str | None = child
        while node is not None:
            if node == top:
                return True
            node = snap.providers[node].parent_uuid
        return False

    return len(uuids) == 1 or any(all(under(o, top) for o in uuids) for top in uuids)


def reference_candidates(snap: World, req: CandidatesRequest) -> tuple[set[Key], set[str]]:
    """(every distinct answer, the providers to summarise)."""
    unnamed = req.group("")
    unnamed_rcs = list(unnamed.resources) if unnamed else []
    suffixed = [g for g in req.groups if g.suffix]
    everyone = list(snap.providers)
    answers: set[Key] = set()
    for anchor in [u for u, p in snap.providers.items() if p.parent_uuid is None]:
        traits = snap.providers[anchor].traits
        if not req.root_required <= traits or req.root_forbidden & traits:
            continue
        for combo in itertools.product(everyone, repeat=len(unnamed_rcs) + len(suffixed)):
            picks = dict(zip(unnamed_rcs, combo, strict=False))
            granular = dict(
                zip((g.suffix for g in suffixed), combo[len(unnamed_rcs) :], strict=True)
            )
            if unnamed and not _unnamed_ok(snap, unnamed, anchor, picks):
                continue
            if not all(_suffixed_ok(snap, g, anchor, granular[g.suffix]) for g in suffixed):
                continue
            if req.group_policy == "isolate" and len(set(granular.values())) != len(granular):
                continue
            mappings: dict[str, set[str]] = {s: {u} for s, u in granular.items()}
            if unnamed:
                mappings[""] = set(picks.values())
            if not all(
                _same_subtree_ok(snap, set().union(*(mappings[s] for s in sub)))
                for sub in req.same_subtree
            ):
                continue
            amounts: dict[tuple[str, str], int] = {}
            for rc, uuid in picks.items():
                amounts[(uuid, rc)] = amounts.get((uuid, rc), 0) + unnamed.resources[rc]  # type: ignore[union-attr]
            for g in suffixed:
                for rc, n in g.resources.items():
                    key = (granular[g.suffix], rc)
                    amounts[key] = amounts.get(key, 0) + n
            if any(
                snap.providers[u].inventories[rc].used + n
                > int(
                    (
                        snap.providers[u].inventories[rc].total
                        - snap.providers[u].inventories[rc].reserved
                    )
                    * snap.providers[u].inventories[rc].allocation_ratio
                )
                or n > snap.providers[u].inventories[rc].max_unit
                for (u, rc), n in amounts.items()
            ):
                continue
            used_roots = [snap.providers[u].root_uuid for u in {u for u, _ in amounts}]
            if req.version < (1, 29) and snap.has_trees and len(used_roots) != len(set(used_roots)):
                continue
            answers.add(
                (
                    frozenset((u, rc, n) for (u, rc), n in amounts.items()),
                    frozenset((s, tuple(sorted(us))) for s, us in mappings.items()),
                )
            )
    return answers, summaries_for(snap, req, answers)


def summaries_for(snap: World, req: CandidatesRequest, answers: set[Key]) -> set[str]:
    takers = {u for resources, _ in answers for u, _, _ in resources}
    if req.version < (1, 29) and snap.has_trees:
        return takers
    roots = {snap.providers[u].root_uuid for u in takers}
    return {u for u, p in snap.providers.items() if p.root_uuid in roots}

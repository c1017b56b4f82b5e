"""The allocation candidate search.

Pipeline, cheapest first:
1. ``anchor_roots``: roots allowed by ``root_required``.
2. ``group_tables``: per group and anchor, the providers that may serve it (names checked here).
3. Per anchor common to all groups, a lazy depth-first search over the slots (one per class of
   the unnamed group, one per suffixed group), pruning a branch as soon as summed amounts on a
   provider exceed its capacity or max_unit, or ``group_policy=isolate`` is broken; complete
   assignments are then checked for the unnamed group's traits, ``same_subtree`` and (before
   1.29) the one-provider-per-tree rule.
4. The anchors' searches are interleaved round-robin, so a ``limit`` spreads over trees and
   stops the search as soon as it is reached. Identical answers (same amounts per provider and
   same mappings) reached from different anchors are returned once.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from berth.placement.candidates.groups import (
    GroupTable,
    NoCandidates,
    Slot,
    anchor_roots,
    group_tables,
)
from berth.placement.candidates.request import CandidatesRequest
from berth.placement.candidates.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class AllocationRequest:
    """One candidate: amounts per provider and class, and which providers served each group."""

    anchor: str
    resources: dict[str, dict[str, int]]
    mappings: dict[str, tuple[str, ...]]

    def key(self) -> tuple[frozenset[tuple[str, str, int]], frozenset[tuple[str, tuple[str, ...]]]]:
        """What makes two candidates the same answer (the anchor does not)."""
        return (
            frozenset(
                (rp, rc, n) for rp, amounts in self.resources.items() for rc, n in amounts.items()
            ),
            frozenset(self.mappings.items()),
        )


@dataclass(frozen=True, slots=True)
class Candidates:
    allocation_requests: tuple[AllocationRequest, ...]
    # Providers to summarise, in snapshot order.
    summaries: tuple[str, ...]
    # Every class named by any group (summaries before 1.27 show only these).
    requested_classes: frozenset[str]


def allocation_candidates(
    snapshot: Snapshot, request: CandidatesRequest, *, randomize: bool, rng: random.Random
) -> Candidates:
    requested = frozenset(rc for g in request.groups for rc in g.resources)
    try:
        anchors = anchor_roots(snapshot, request)
        tables = group_tables(snapshot, request, anchors)
    except NoCandidates:
        return Candidates((), (), requested)
    common = [root for root in snapshot.roots() if all(root in t for t in tables)]
    if randomize:
        rng.shuffle(common)
    searches = [
        _search(snapshot, request, _slots(tables, root, randomize, rng), root) for root in common
    ]
    found: dict[object, AllocationRequest] = {}
    for areq in _round_robin(searches):
        found.setdefault(areq.key(), areq)
        if request.limit is not None and len(found) >= request.limit:
            break
    areqs = tuple(found.values())
    return Candidates(areqs, _summaries(snapshot, request, areqs), requested)


def _slots(tables: list[GroupTable], root: str, randomize: bool, rng: random.Random) -> list[Slot]:
    # The unnamed group's slots first, so its trait check runs as soon as they are filled.
    slots = sorted((s for t in tables for s in t[root]), key=lambda s: s.suffix != "")
    if randomize:
        slots = [
            Slot(s.suffix, s.rc, s.resources, tuple(rng.sample(s.options, len(s.options))))
            for s in slots
        ]
    return slots


def _round_robin(searches: list[Iterator[AllocationRequest]]) -> Iterator[AllocationRequest]:
    active = list(searches)
    while active:
        still = []
        for search in active:
            areq = next(search, None)
            if areq is not None:
                yield areq
                still.append(search)
        active = still


class _State:
    """The partial assignment of one anchor's search."""

    def __init__(self, snapshot: Snapshot, request: CandidatesRequest) -> None:
        self.snapshot = snapshot
        self.request = request
        self.amounts: dict[tuple[str, str], int] = {}
        self.chosen: list[tuple[Slot, str]] = []
        self.isolated: set[str] = set()

    def place(self, slot: Slot, uuid: str) -> bool:
        """Add ``slot`` on ``uuid`` if the summed amounts still fit; True when placed."""
        if slot.rc is None and uuid in self.isolated:
            return False
        inventories = self.snapshot.providers[uuid].inventories
        for rc, n in slot.resources:
            total = self.amounts.get((uuid, rc), 0) + n
            inv = inventories[rc]
            if inv.used + total > inv.capacity or total > inv.max_unit:
                return False
        for rc, n in slot.resources:
            self.amounts[(uuid, rc)] = self.amounts.get((uuid, rc), 0) + n
        if slot.rc is None and self.request.group_policy == "isolate":
            self.isolated.add(uuid)
        self.chosen.append((slot, uuid))
        return True

    def undo(self) -> None:
        slot, uuid = self.chosen.pop()
        for rc, n in slot.resources:
            self.amounts[(uuid, rc)] -= n
            if not self.amounts[(uuid, rc)]:
                del self.amounts[(uuid, rc)]
        if slot.rc is None:
            self.isolated.discard(uuid)

    def mappings(self) -> dict[str, set[str]]:
        result: dict[str, set[str]] = {}
        for slot, uuid in self.chosen:
            result.setdefault(slot.suffix, set()).add(uuid)
        return result


def _search(
    snapshot: Snapshot, request: CandidatesRequest, slots: list[Slot], anchor: str
) -> Iterator[AllocationRequest]:
    state = _State(snapshot, request)
    unnamed = request.group("")
    n_unnamed = sum(1 for s in slots if s.rc is not None)

    def walk(i: int) -> Iterator[AllocationRequest]:
        if i == n_unnamed and unnamed is not None and unnamed.required:
            traits = frozenset().union(*(snapshot.providers[u].traits for _, u in state.chosen))
            if not all(any_of & traits for any_of in unnamed.required):
                return
        if i == len(slots):
            areq = _complete(snapshot, request, state, anchor)
            if areq is not None:
                yield areq
            return
        for uuid in slots[i].options:
            if state.place(slots[i], uuid):
                yield from walk(i + 1)
                state.undo()

    return walk(0)


def _complete(
    snapshot: Snapshot, request: CandidatesRequest, state: _State, anchor: str
) -> AllocationRequest | None:
    mappings = state.mappings()
    for suffixes in request.same_subtree:
        members = set().union(*(mappings[s] for s in suffixes))
        if len(members) > 1 and not any(
            all(m in snapshot.ancestors(other) for other in members) for m in members
        ):
            return None
    resources: dict[str, dict[str, int]] = {}
    for (uuid, rc), n in state.amounts.items():
        resources.setdefault(uuid, {})[rc] = n
    if not request.nested_aware and snapshot.has_trees:
        roots = [snapshot.root_of(uuid) for uuid in resources]
        if len(roots) != len(set(roots)):
            return None
    return AllocationRequest(
        anchor=anchor,
        resources=resources,
        mappings={suffix: tuple(sorted(uuids)) for suffix, uuids in mappings.items()},
    )


def _summaries(
    snapshot: Snapshot, request: CandidatesRequest, areqs: tuple[AllocationRequest, ...]
) -> tuple[str, ...]:
    """Every provider in the trees the candidates take resources from; before 1.29 (when any
    tree exists) only the providers the candidates take from."""
    used = {uuid for areq in areqs for uuid in areq.resources}
    if not request.nested_aware and snapshot.has_trees:
        return tuple(uuid for uuid in snapshot.providers if uuid in used)
    roots = {snapshot.root_of(uuid) for uuid in used}
    return tuple(uuid for uuid, p in snapshot.providers.items() if p.root_uuid in roots)

"""The options of one pass, kept between the instances it places, and their ranking.

A pass places instance after instance (of one request, or the members of a batch) on the same
candidates. Between two instances only a little changes: the host the last one landed on (a new
HostState), the candidates that drew from a provider it took from (they may no longer fit),
and a candidate whose claim was refused (dropped). So each compute node's outcome (its
candidates that fit, what the filters kept or the stage that removed it, the kept candidates'
raw weights) is kept, and worked out again only for the nodes those changes touch; while the
spec is the same object (filters and weighers are pure functions of host, spec and candidate,
``filters.base``, ``weighers.base``). A new spec (a server group with one more member) works
every node out again.

Passes of one shape (``batching``) also keep, between them, each node's outcome as the first
ranking of a pass found it (``Outcomes``): before anything landed, with the same spec, pipeline
and weighers, an outcome depends only on the node's HostState and candidates, so it is taken
again while both are the very objects it was worked out from (the host cache makes a HostState
again when its host changed; ``KnownCandidates`` keeps a candidate Placement proposes again).
When a pass's candidates are the very objects of the pass before, in the same order (the usual
case: answers to one shape repeat but for the summaries' usage), the nodes are grouped as they
were (``_Layout``), and the first ranking starts from the arrays the one before ended with
(``_FirstRanking``), working out again only the nodes whose HostState is another object: a pass
walks in Python only over what changed since the one before.

Each instance's ranking is then made from those outcomes in a few array operations, as it was
made before from scratch: the options in Placement's order of their nodes, shuffled by a
generator the instance's seeded one seeds, weighed (``weighers.totals``), and sorted best
first, stably.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress

import numpy as np

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler import diagnosis as diag
from berth.compute.scheduler.candidates import Candidate, ProviderUsage
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import HostFilter, asking, filter_host
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers import HostWeigher, totals, weighing

__all__ = ["Options", "Outcomes", "Ranked", "Ranking"]


@dataclass(slots=True)
class Ranked:
    """One host in the ranking with its surviving candidates, best first."""

    host: HostState
    options: list[tuple[float, Candidate]]


class Ranking:
    """The hosts best first, a host ranking by its best option, options by weight and, among
    equal weights, in the shuffled order (a stable sort).

    A claim looks at the first ``host_subset_size`` hosts and the alternates at the next few of
    the cell, so a host's entry is made only when it is looked at: with one option a host (the
    usual case), that is the sorted order itself."""

    def __init__(
        self,
        option: Callable[[int], tuple[HostState, Candidate]],
        weights: Sequence[float],
        order: np.ndarray,
        nodes: np.ndarray,
        size: int,
    ) -> None:
        """``option(p)`` is the shuffled option at position ``p``, ``weights[p]`` its weight,
        ``order`` the positions best first, ``nodes[p]`` a number for the option's node, and
        ``size`` the number of nodes among the options."""
        self._option = option
        self._weights = weights
        self._order = iter(order.tolist())
        self._ordered: list[Ranked] = []
        self._size = size
        # When a host has several options: the positions best first, grouped by node (in
        # ``_by_node``, with ``_nodes`` their nodes, sorted), and the nodes already ranked.
        self._grouped = self._size < len(weights)
        if self._grouped:
            self._codes = nodes
            ranked_nodes = nodes[order]
            by_node = np.argsort(ranked_nodes, kind="stable")
            self._by_node = order[by_node]
            self._nodes = ranked_nodes[by_node]
            self._seen: set[int] = set()

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, index: int) -> Ranked:
        self._order_to(index)
        return self._ordered[index]

    def __delitem__(self, index: int) -> None:
        self._order_to(index)
        del self._ordered[index]
        self._size -= 1

    def __iter__(self) -> Iterator[Ranked]:
        index = 0
        while index < self._size:
            yield self[index]
            index += 1

    def _order_to(self, index: int) -> None:
        if not 0 <= index < self._size:
            raise IndexError(index)
        option, weights = self._option, self._weights
        while len(self._ordered) <= index:
            p = next(self._order)
            host, candidate = option(p)
            if not self._grouped:
                self._ordered.append(Ranked(host, [(weights[p], candidate)]))
                continue
            code = int(self._codes[p])
            if code in self._seen:
                continue
            self._seen.add(code)
            start, end = np.searchsorted(self._nodes, [code, code + 1])
            positions = self._by_node[start:end].tolist()  # the host's first is its best
            self._ordered.append(Ranked(host, [(weights[q], option(q)[1]) for q in positions]))


# What a node is for the current spec: its kept candidates' indices, or why it has none.
_ABSENT, _UNKNOWN, _TAKEN, _REMOVED, _KEPT = range(5)


_Pipeline = tuple[HostFilter, ...]
_Weighers = tuple[tuple[HostWeigher, float], ...]


@dataclass(frozen=True, slots=True)
class _Outcome:
    """A node's outcome before anything landed, and what it was worked out from."""

    host: HostState | None
    candidates: tuple[Candidate, ...]
    status: int
    # The stage that removed the node: (its index, its name, the reason).
    removal: tuple[int, str, str] | None
    # The place among ``candidates`` of the first that fitted (the node's place in the
    # ranking's order), the kept ones' places and their raw weights.
    first: int
    kept: tuple[int, ...]
    raws: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, slots=True)
class _Layout:
    """A pass's candidates grouped by node. Nothing changes it once made: passes whose
    candidates are the very same objects, in the same order, share it."""

    candidates: list[Candidate]
    # Node -> its candidates' indices; the nodes in the order of their first candidate.
    by_root: dict[str, list[int]]
    roots: frozenset[str]
    # Per candidate: a number for its node (its place in ``by_root``).
    node_codes: np.ndarray

    @classmethod
    def of(cls, candidates: Sequence[Candidate]) -> _Layout:
        by_root: dict[str, list[int]] = {}
        for i, candidate in enumerate(candidates):
            by_root.setdefault(candidate.root, []).append(i)
        codes = {root: n for n, root in enumerate(by_root)}
        node_codes = np.array([codes[c.root] for c in candidates], dtype=np.int64)
        return cls(list(candidates), by_root, frozenset(by_root), node_codes)

    def holds(self, candidates: Sequence[Candidate]) -> bool:
        """Whether ``candidates`` are this layout's, the very objects in the same order."""
        mine = self.candidates
        return len(candidates) == len(mine) and all(map(operator.is_, candidates, mine))


@dataclass(frozen=True, slots=True)
class _FirstRanking:
    """What ``Options`` knew after a pass's first ranking, every node's outcome written into
    its arrays, and the HostState each node was worked out with. Nothing changes it once
    made: a pass starts from copies."""

    layout: _Layout
    # Per node of ``layout.by_root``, in its order: its HostState (None: unknown).
    hosts: list[HostState | None]
    status: dict[str, int]
    counts: tuple[int, ...]
    removals: dict[str, tuple[int, int, str, str]]
    kept: np.ndarray
    key: np.ndarray
    raws: np.ndarray


class Outcomes:
    """Each node's outcome as the first ranking of a pass found it, for the next pass of the
    same spec, pipeline and weighers, with the layout of the last candidates and the first
    ranking's arrays. Passes may run at once: each takes what was kept when it began and
    keeps its own (either is right for the objects it names)."""

    def __init__(self) -> None:
        self._kept: (
            tuple[RequestSpec, _Pipeline, _Weighers, dict[str, _Outcome], _FirstRanking] | None
        ) = None
        self._layout: _Layout | None = None

    def layout(self, candidates: Sequence[Candidate]) -> _Layout:
        """The layout of ``candidates``: the last one when it holds them, else a new one."""
        layout = self._layout
        if layout is None or not layout.holds(candidates):
            layout = self._layout = _Layout.of(candidates)
        return layout

    def get(
        self, spec: RequestSpec, pipeline: _Pipeline, weighers: _Weighers
    ) -> tuple[dict[str, _Outcome], _FirstRanking | None]:
        kept = self._kept
        if kept is None or kept[0] is not spec or kept[1:3] != (pipeline, weighers):
            return {}, None
        return kept[3], kept[4]

    def keep(
        self,
        spec: RequestSpec,
        pipeline: _Pipeline,
        weighers: _Weighers,
        nodes: dict[str, _Outcome],
        first: _FirstRanking,
    ) -> None:
        self._kept = (spec, pipeline, weighers, nodes, first)


class Options:
    """The candidates of one pass and each compute node's outcome, kept between instances."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        by_node: dict[str, HostState],
        usage: ProviderUsage,
        outcomes: Outcomes | None = None,
    ) -> None:
        """``outcomes``: the nodes' outcomes kept between passes of one shape, taken and
        kept by the first ranking."""
        layout = _Layout.of(candidates) if outcomes is None else outcomes.layout(candidates)
        self._layout = layout
        self._candidates = layout.candidates
        self._outcomes = outcomes
        # Nothing landed and nothing dropped yet: outcomes are those ``Outcomes`` keeps.
        self._fresh = True
        # The pass's hosts, as they change (the caller replaces a host an instance landed on).
        self._by_node = by_node
        self._usage = usage
        self._alive = [True] * len(candidates)
        self._dropped = 0
        # Nodes whose every candidate was dropped (their claims refused).
        self.emptied = 0
        self._by_root = layout.by_root
        # Provider -> the nodes with a candidate drawing from it, made when first needed.
        self._users: dict[str, set[str]] | None = None
        self.roots = layout.roots
        # Per candidate: a number for its node.
        self._node_codes = layout.node_codes
        self._spec: RequestSpec | None = None
        self._pipeline: _Pipeline = ()
        self._weighers: _Weighers = ()
        self._stages: list[tuple[int, HostFilter]] = []
        self._weighing: list[tuple[HostWeigher, float]] = []
        self._dirty: set[str] = set()
        self._status: dict[str, int] = {}
        self._counts = [0] * 5
        # Per node the filters removed: (stage index, first fitting index, stage, reason).
        self._removals: dict[str, tuple[int, int, str, str]] = {}
        # Per candidate: kept for the current spec; the place of its node (its first fitting
        # candidate's index); its raw weights.
        self._kept = np.zeros(len(candidates), dtype=bool)
        self._key = np.zeros(len(candidates), dtype=np.int64)
        self._raws = np.zeros((len(candidates), 0))

    def landed(self, candidate: Candidate) -> None:
        """An instance took ``candidate``: its node changed, and so may every node with a
        candidate on the providers it drew from."""
        self._fresh = False
        self._dirty.add(candidate.root)
        for rp in candidate.allocations:
            # A provider of the node's own tree serves no other node's candidates.
            if self._usage.root_of(rp) != candidate.root:
                self._dirty |= self._users_of(rp)

    def _users_of(self, rp: str) -> set[str]:
        if self._users is None:
            self._users = {}
            for candidate in self._candidates:
                for used in candidate.allocations:
                    self._users.setdefault(used, set()).add(candidate.root)
        return self._users.get(rp, set())

    def drop(self, candidate: Candidate) -> None:
        """Leave ``candidate`` out from now on (its claim was refused). By identity: another
        candidate may be equal to it and still claimable."""
        for i in self._by_root[candidate.root]:
            if self._alive[i] and self._candidates[i] is candidate:
                self._fresh = False
                self._alive[i] = False
                self._dropped += 1
                self._dirty.add(candidate.root)
                if not self._alive_of(self._by_root[candidate.root]):
                    self.emptied += 1
                return

    def rank(
        self,
        spec: RequestSpec,
        pipeline: _Pipeline,
        weighers: _Weighers,
        recorder: Recorder,
        rng: random.Random,
    ) -> Ranking:
        """The ranking for one instance of ``spec``, its removals recorded."""
        if spec is not self._spec or pipeline != self._pipeline or weighers != self._weighers:
            self._spec, self._pipeline, self._weighers = spec, pipeline, weighers
            self._stages = asking(pipeline, spec)
            self._weighing = weighing(weighers, spec)
            self._raws = np.zeros((len(self._candidates), len(self._weighing)))
            self._dirty = set(self._by_root)
        self._update(spec)
        for _ in range(self._counts[_UNKNOWN]):
            recorder.removed(diag.HOST_STATE, diag.UNKNOWN_HOST)
        for _ in range(self._counts[_TAKEN]):
            recorder.removed(diag.REQUEST_CAPACITY, diag.TAKEN)
        for _, _, stage, reason in sorted(self._removals.values()):
            recorder.removed(stage, reason)
        kept = np.flatnonzero(self._kept)
        placed = kept[np.lexsort((kept, self._key[kept]))]
        # Shuffled by a generator the instance's own seeds: numpy's permutation of a thousand
        # options costs a fortieth of random.shuffle's.
        shuffle = np.random.default_rng(rng.getrandbits(64))
        shuffled = placed[shuffle.permutation(len(placed))]
        # Arrays indexed by an array, candidates by a list (each a third of the other's cost).
        flat: list[int] = shuffled.tolist()
        weights = totals(self._raws[shuffled], [m for _, m in self._weighing])
        order = np.argsort(-weights, kind="stable")
        candidates, by_node = self._candidates, self._by_node

        def option(p: int) -> tuple[HostState, Candidate]:
            candidate = candidates[flat[p]]
            return by_node[candidate.root], candidate

        # A node whose outcome kept candidates is one among the options (its kept ones).
        size = self._counts[_KEPT]
        return Ranking(option, weights.tolist(), order, self._node_codes[shuffled], size)

    def _update(self, spec: RequestSpec) -> None:
        """Work out again what each changed node is for ``spec`` (the arrays are written once
        for all of them); before anything landed, from the outcomes kept when they still
        hold."""
        # Kept between passes: the outcomes of every node, before anything landed.
        keeping = (
            self._outcomes is not None and self._fresh and len(self._dirty) == len(self._by_root)
        )
        known: dict[str, _Outcome] = {}
        outcomes: dict[str, _Outcome] = {}
        hosts: list[HostState | None] = []
        if keeping:
            assert self._outcomes is not None
            known, first = self._outcomes.get(spec, self._pipeline, self._weighers)
            hosts = list(map(self._by_node.get, self._by_root))
            if first is not None and first.layout is self._layout:
                if self._start_from(first, hosts):
                    return
                outcomes = dict(known)
        cleared: list[int] = []
        kept: list[int] = []
        keys: list[int] = []
        raws: list[tuple[float, ...]] = []
        by_root, host_of, candidates = self._by_root, self._by_node.get, self._candidates
        status_of, counts, removals = self._status, self._counts, self._removals
        for root in self._dirty:
            indices = by_root[root]
            cleared += indices
            old = status_of.get(root)
            if old is not None:
                counts[old] -= 1
                removals.pop(root, None)
            outcome = known.get(root)
            if (
                outcome is None
                or outcome.host is not host_of(root)
                or outcome.candidates != tuple([candidates[i] for i in indices])
            ):
                outcome = self._outcome(root, spec)
            if keeping:
                outcomes[root] = outcome
            status = status_of[root] = outcome.status
            counts[status] += 1
            if outcome.kept:
                first = indices[outcome.first]
                if len(outcome.kept) == 1:
                    kept.append(indices[outcome.kept[0]])
                    keys.append(first)
                else:
                    kept += [indices[j] for j in outcome.kept]
                    keys += [first] * len(outcome.kept)
                raws += outcome.raws
            elif outcome.removal is not None:
                index, stage, reason = outcome.removal
                removals[root] = (index, indices[outcome.first], stage, reason)
        self._dirty.clear()
        self._kept[cleared] = False
        self._kept[kept] = True
        self._key[kept] = keys
        if self._weighing and kept:
            self._raws[kept] = raws
        if keeping:
            assert self._outcomes is not None
            self._outcomes.keep(
                spec, self._pipeline, self._weighers, outcomes, self._first_ranking(hosts)
            )

    def _start_from(self, first: _FirstRanking, hosts: list[HostState | None]) -> bool:
        """Take the first ranking of the pass before (of these very candidates) as this one's,
        the nodes whose HostState is another object left to work out again (``_dirty``): True
        when there are none (nothing is left to do, and what is kept still holds)."""
        self._status = dict(first.status)
        self._counts = list(first.counts)
        self._removals = dict(first.removals)
        self._kept = first.kept.copy()
        self._key = first.key.copy()
        self._raws = first.raws.copy()
        self._dirty = set(compress(self._by_root, map(operator.is_not, hosts, first.hosts)))
        return not self._dirty

    def _first_ranking(self, hosts: list[HostState | None]) -> _FirstRanking:
        return _FirstRanking(
            self._layout,
            hosts,
            dict(self._status),
            tuple(self._counts),
            dict(self._removals),
            self._kept.copy(),
            self._key.copy(),
            self._raws.copy(),
        )

    def _outcome(self, root: str, spec: RequestSpec) -> _Outcome:
        """What ``root`` is for ``spec``, worked out."""
        indices = self._by_root[root]
        candidates = tuple([self._candidates[i] for i in indices])
        host = self._by_node.get(root)
        alive = self._alive_of(indices)
        if not alive:
            return _Outcome(host, candidates, _ABSENT, None, 0, (), ())
        if host is None:
            return _Outcome(host, candidates, _UNKNOWN, None, 0, (), ())
        fits = self._usage.fits
        fitting = [i for i in alive if fits(self._candidates[i])]
        if not fitting:
            return _Outcome(host, candidates, _TAKEN, None, 0, (), ())
        place = {i: j for j, i in enumerate(indices)}
        first = place[fitting[0]]
        passed, removed = filter_host(
            host, [self._candidates[i] for i in fitting], spec, self._stages
        )
        if removed is not None:
            return _Outcome(host, candidates, _REMOVED, removed, first, (), ())
        if len(passed) == len(fitting):
            chosen = fitting
        else:  # some of the fitting ones, in order (by identity)
            at = iter(fitting)
            chosen = [next(i for i in at if self._candidates[i] is c) for c in passed]
        kept = tuple([place[i] for i in chosen])
        raws = tuple(
            tuple([w.raw(host, spec, candidates[j]) for w, _ in self._weighing]) for j in kept
        )
        return _Outcome(host, candidates, _KEPT, None, first, kept, raws)

    def _alive_of(self, indices: list[int]) -> list[int]:
        if not self._dropped:
            return indices
        alive = self._alive
        return [i for i in indices if alive[i]]

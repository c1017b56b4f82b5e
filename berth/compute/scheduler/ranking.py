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

Each instance's ranking is then made from those outcomes in a few array operations, as it was
made before from scratch: the options in Placement's order of their nodes, shuffled by a
generator the instance's seeded one seeds, weighed (``weighers.totals``), and sorted best
first, stably.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler import diagnosis as diag
from berth.compute.scheduler.candidates import Candidate, ProviderUsage
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import HostFilter, asking, filter_host
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers import HostWeigher, totals, weighing

__all__ = ["Options", "Ranked", "Ranking"]


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
    ) -> None:
        """``option(p)`` is the shuffled option at position ``p``, ``weights[p]`` its weight,
        ``order`` the positions best first, ``nodes[p]`` a number for the option's node."""
        self._option = option
        self._weights = weights
        self._order = iter(order.tolist())
        self._ordered: list[Ranked] = []
        self._size = len(np.unique(nodes))
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


class Options:
    """The candidates of one pass and each compute node's outcome, kept between instances."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        by_node: dict[str, HostState],
        usage: ProviderUsage,
    ) -> None:
        self._candidates = list(candidates)
        # The pass's hosts, as they change (the caller replaces a host an instance landed on).
        self._by_node = by_node
        self._usage = usage
        self._alive = [True] * len(candidates)
        self._dropped = 0
        # Nodes whose every candidate was dropped (their claims refused).
        self.emptied = 0
        self._by_root: dict[str, list[int]] = {}
        for i, candidate in enumerate(candidates):
            self._by_root.setdefault(candidate.root, []).append(i)
        # Provider -> the nodes with a candidate drawing from it, made when first needed.
        self._users: dict[str, set[str]] | None = None
        self.roots = set(self._by_root)
        # Per candidate: a number for its node.
        codes = {root: n for n, root in enumerate(self._by_root)}
        self._node_codes = np.array([codes[c.root] for c in candidates], dtype=np.int64)
        self._spec: RequestSpec | None = None
        self._pipeline: tuple[HostFilter, ...] = ()
        self._weighers: tuple[tuple[HostWeigher, float], ...] = ()
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
                self._alive[i] = False
                self._dropped += 1
                self._dirty.add(candidate.root)
                if not self._alive_of(self._by_root[candidate.root]):
                    self.emptied += 1
                return

    def rank(
        self,
        spec: RequestSpec,
        pipeline: tuple[HostFilter, ...],
        weighers: tuple[tuple[HostWeigher, float], ...],
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
        flat: list[int] = placed[shuffle.permutation(len(placed))].tolist()
        weights = totals(self._raws[flat], [m for _, m in self._weighing])
        order = np.argsort(-weights, kind="stable")
        candidates, by_node = self._candidates, self._by_node

        def option(p: int) -> tuple[HostState, Candidate]:
            candidate = candidates[flat[p]]
            return by_node[candidate.root], candidate

        return Ranking(option, weights.tolist(), order, self._node_codes[flat])

    def _update(self, spec: RequestSpec) -> None:
        """Work out again what each changed node is for ``spec`` (the arrays are written once
        for all of them)."""
        cleared: list[int] = []
        kept: list[int] = []
        keys: list[int] = []
        for root in self._dirty:
            cleared += self._by_root[root]
            old = self._status.get(root)
            if old is not None:
                self._counts[old] -= 1
            self._removals.pop(root, None)
            status = self._status[root] = self._outcome(root, spec, kept, keys)
            self._counts[status] += 1
        self._dirty.clear()
        self._kept[cleared] = False
        self._kept[kept] = True
        self._key[kept] = keys
        if self._weighing and kept:
            candidates, by_node, weighing = self._candidates, self._by_node, self._weighing
            self._raws[kept] = [
                [w.raw(by_node[candidates[i].root], spec, candidates[i]) for w, _ in weighing]
                for i in kept
            ]

    def _outcome(self, root: str, spec: RequestSpec, kept: list[int], keys: list[int]) -> int:
        """What ``root`` is for ``spec``; its kept candidates' indices are added to ``kept``
        and its place (its first fitting candidate's index) to ``keys``, once for each."""
        indices = self._alive_of(self._by_root[root])
        if not indices:
            return _ABSENT
        host = self._by_node.get(root)
        if host is None:
            return _UNKNOWN
        candidates, fits = self._candidates, self._usage.fits
        fitting = [i for i in indices if fits(candidates[i])]
        if not fitting:
            return _TAKEN
        passed, removed = filter_host(host, [candidates[i] for i in fitting], spec, self._stages)
        if removed is not None:
            index, stage, reason = removed
            self._removals[root] = (index, fitting[0], stage, reason)
            return _REMOVED
        if len(passed) == len(fitting):
            chosen = fitting
        else:  # some of the fitting ones, in order (by identity)
            at = iter(fitting)
            chosen = [next(i for i in at if candidates[i] is candidate) for candidate in passed]
        kept += chosen
        keys += [fitting[0]] * len(chosen)
        return _KEPT

    def _alive_of(self, indices: list[int]) -> list[int]:
        if not self._dropped:
            return indices
        alive = self._alive
        return [i for i in indices if alive[i]]

"""How many more instances of one request fit on a host, from Placement's candidates.

Each candidate of a host is one way an instance can draw from the host's providers (which
bridge serves a port's bandwidth, say). Placement answered it because one instance fits that
way now, so the per-allocation rules (``min_unit``, ``max_unit``, ``step_size``) hold for each
of its amounts; what is left to count is capacity, ``(total - reserved) * allocation_ratio``
less what is used, per provider and class (the answer's provider summaries). The count is the
largest number of candidates, each taken any number of times, whose amounts together stay
within every provider's free capacity: a small integer programme, solved exactly.

1. One way: the scarcest provider and class decides (``free // amount``).
2. Several: a greedy packing (each step takes the way that keeps the bound below highest)
   is compared with an upper bound; when they meet, the count is exact.
3. Otherwise a depth-first search over what is left free, remembered per state and cut by the
   bound, finds the best packing; past ``budget`` states it stops and the greedy count is
   answered as a lower bound (``exact`` false).

The bound, for a state: no provider and class taken by every way can hold more than
``free // least amount``; no resource class more than its free capacity over all providers that
serve it divided by what one instance takes of it; and where each way takes the whole of a class
from one provider, no more than the sum over those providers of ``free // amount``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["SEARCH_BUDGET", "Fit", "most_instances"]

# Provider uuid, resource class.
Key = tuple[str, str]
# Provider -> class -> amount, as a candidate's allocations are.
Ways = Sequence[Mapping[str, Mapping[str, int]]]
# States the exact search may visit for one host.
SEARCH_BUDGET = 20_000
# Deeper than this the search is not tried (Python's stack; the bound was loose anyway).
_DEEPEST = 400


@dataclass(frozen=True, slots=True)
class Fit:
    count: int
    # False when the search ran out of budget: ``count`` is then what a greedy packing reached.
    exact: bool = True


def most_instances(ways: Ways, free: Mapping[Key, int | None], budget: int = SEARCH_BUDGET) -> Fit:
    """The most instances that fit, each in one of ``ways``, within ``free`` (provider and
    class -> free capacity; None or absent: not limited here)."""
    problem = _Problem.of(ways, free)
    if problem is None:
        return Fit(0)
    start = problem.start
    if len(problem.ways) == 1:
        return Fit(problem.bound(start))
    bound = problem.bound(start)
    greedy = problem.greedy(start)
    if greedy >= bound:
        return Fit(greedy)
    if bound > _DEEPEST:
        return Fit(greedy, exact=False)
    search = _Search(problem, budget, greedy)
    try:
        return Fit(search.best(start))
    except _OutOfBudget:
        return Fit(max(greedy, search.found), exact=False)


class _OutOfBudget(Exception):
    pass


@dataclass(frozen=True, slots=True)
class _Problem:
    keys: tuple[Key, ...]
    # Each way as amounts per key (same order as ``keys``), every way distinct.
    ways: tuple[tuple[int, ...], ...]
    start: tuple[int, ...]
    # Indexes of keys every way takes from, with the least amount a way takes there.
    common: tuple[tuple[int, int], ...]
    # Per class: the keys that serve it, what one instance takes of it in all, and whether
    # every way takes all of it from one key.
    classes: tuple[tuple[tuple[int, ...], int, bool], ...]

    @classmethod
    def of(cls, ways: Ways, free: Mapping[Key, int | None]) -> _Problem | None:
        flat = {
            tuple(sorted(((rp, rc), n) for rp, amounts in way.items() for rc, n in amounts.items()))
            for way in ways
        }
        limited = {key for way in flat for key, n in way if n > 0 and free.get(key) is not None}
        keys = tuple(sorted(limited))
        start = tuple(max(0, free[key] or 0) for key in keys)
        vectors = set()
        for way in flat:
            amounts = dict(way)
            vectors.add(tuple(amounts.get(key, 0) for key in keys))
        fitting = tuple(sorted(v for v in vectors if _fits(v, start)))
        if not fitting:
            return None
        if not keys:
            raise ValueError("a request that takes nothing limited fits without end")
        common = tuple(
            (i, min(v[i] for v in fitting)) for i in range(len(keys)) if all(v[i] for v in fitting)
        )
        return cls(keys, fitting, start, common, _classes(keys, fitting))

    def bound(self, state: tuple[int, ...]) -> int:
        found = min((state[i] // least for i, least in self.common), default=None)
        for members, per_instance, whole in self.classes:
            if whole:
                room = sum(state[i] // per_instance for i in members)
            else:
                room = sum(state[i] for i in members) // per_instance
            found = room if found is None else min(found, room)
        assert found is not None, "every way takes something limited"
        return found

    def greedy(self, state: tuple[int, ...]) -> int:
        placed = 0
        while True:
            after = [_minus(state, way) for way in self.ways if _fits(way, state)]
            if not after:
                return placed
            state = max(after, key=self.bound)
            placed += 1


class _Search:
    """Branch and bound. ``found`` is always a packing reached; a branch is cut once even its
    bound cannot beat it, so the optimum's own path is never cut and ``found`` ends at it."""

    def __init__(self, problem: _Problem, budget: int, known: int) -> None:
        self.problem = problem
        self.budget = budget
        self.found = known
        self.seen: dict[tuple[tuple[int, ...], int], int] = {}

    def best(self, start: tuple[int, ...]) -> int:
        self._from(start, 0)
        return self.found

    def _from(self, state: tuple[int, ...], depth: int) -> int:
        """Instances a packing places from ``state`` on (``depth`` placed before it)."""
        remembered = self.seen.get((state, depth))
        if remembered is not None:
            return remembered
        if len(self.seen) >= self.budget:
            raise _OutOfBudget
        bound = self.problem.bound(state)
        best = 0
        for way in self.problem.ways:
            if best >= bound or depth + bound <= self.found:
                break
            if _fits(way, state):
                best = max(best, 1 + self._from(_minus(state, way), depth + 1))
        self.found = max(self.found, depth + best)
        self.seen[(state, depth)] = best
        return best


def _classes(
    keys: Sequence[Key], ways: Iterable[tuple[int, ...]]
) -> tuple[tuple[tuple[int, ...], int, bool], ...]:
    ways = list(ways)
    found = []
    for rc in sorted({rc for _, rc in keys}):
        members = tuple(i for i, (_, c) in enumerate(keys) if c == rc)
        totals = {sum(way[i] for i in members) for way in ways}
        per_instance = min(totals)
        if per_instance <= 0:
            continue
        whole = len(totals) == 1 and all(sum(1 for i in members if way[i]) == 1 for way in ways)
        found.append((members, per_instance, whole))
    return tuple(found)


def _fits(way: tuple[int, ...], state: tuple[int, ...]) -> bool:
    return all(n <= left for n, left in zip(way, state, strict=True))


def _minus(state: tuple[int, ...], way: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(left - n for left, n in zip(state, way, strict=True))

"""The weigher contract, and how weights combine.

A weigher gives a raw number for a host with one of its candidates: higher is better. For each
weigher the raw numbers of all the options are normalised to [0, 1] (the lowest to 0, the
highest to 1; all equal gives all 0), then multiplied by the weigher's multiplier from the
configuration, and the products are summed. Normalising keeps one weigher's units (megabytes
against a count of failures) from drowning the others; the multipliers say what matters more.
A negative multiplier turns a weigher around (stack instead of spread).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState

__all__ = ["HostWeigher", "WeightMemo", "combine", "normalise"]


class HostWeigher(ABC):
    NAME: ClassVar[str]
    DEFAULT_MULTIPLIER: ClassVar[float] = 1.0

    def same_for_every_host(self, spec: RequestSpec) -> bool:
        """True when every option's raw weight is the same for ``spec``, so that it adds
        nothing once normalised (and is not worked out); False when unsure."""
        return False

    @abstractmethod
    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        """The raw weight: higher is better before the multiplier."""


def normalise(values: Sequence[float]) -> list[float]:
    """Each value's place between the lowest (0.0) and the highest (1.0); all 0.0 when equal."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [0.0] * len(values)
    span = high - low
    return [(v - low) / span for v in values]


class WeightMemo:
    """Raw weights per host state and candidate, kept for the rest of one pass.

    Weighers, like filters, are pure functions of the host state, the spec and the candidate,
    and a host's state is a new value once an instance lands on it; so while the spec is the
    same object, the members of a batch only weigh the hosts that changed. Normalising is still
    done per member, over the options it has. Keyed by identity; the values hold the host state
    and candidate, so no identity is reused while the memo lives.
    """

    def __init__(self) -> None:
        self._spec: RequestSpec | None = None
        self._raws: dict[int, tuple[HostState, Candidate, list[float]]] = {}

    def raws(
        self,
        options: Sequence[tuple[HostState, Candidate]],
        spec: RequestSpec,
        weighers: Sequence[tuple[HostWeigher, float]],
    ) -> list[list[float]]:
        """Per option, the raw weight of each weigher, in order."""
        if spec is not self._spec:
            self._spec, self._raws = spec, {}
        known = self._raws
        found = []
        for host, candidate in options:
            # A candidate is one host's: its identity and the host's say what was weighed.
            seen = known.get(id(candidate))
            if seen is not None and seen[0] is host and seen[1] is candidate:
                found.append(seen[2])
                continue
            raws = [weigher.raw(host, spec, candidate) for weigher, _ in weighers]
            known[id(candidate)] = (host, candidate, raws)
            found.append(raws)
        return found


def combine(
    options: Sequence[tuple[HostState, Candidate]],
    spec: RequestSpec,
    weighers: Sequence[tuple[HostWeigher, float]],
    memo: WeightMemo | None = None,
) -> list[float]:
    """The total weight of each option: sum over weighers of multiplier * normalised raw."""
    # A weigher with no multiplier, or equal raw weights everywhere, adds 0.0 to every total.
    weighing = [
        (weigher, multiplier)
        for weigher, multiplier in weighers
        if multiplier != 0 and not weigher.same_for_every_host(spec)
    ]
    if memo is None:
        memo = WeightMemo()
    raws = memo.raws(options, spec, weighing)
    totals = [0.0] * len(options)
    for (_, multiplier), column in zip(weighing, zip(*raws, strict=True), strict=False):
        totals = [t + multiplier * w for t, w in zip(totals, normalise(column), strict=True)]
    return totals

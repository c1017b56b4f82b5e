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

__all__ = ["HostWeigher", "combine", "normalise"]


class HostWeigher(ABC):
    NAME: ClassVar[str]
    DEFAULT_MULTIPLIER: ClassVar[float] = 1.0

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
    return [(v - low) / (high - low) for v in values]


def combine(
    options: Sequence[tuple[HostState, Candidate]],
    spec: RequestSpec,
    weighers: Sequence[tuple[HostWeigher, float]],
) -> list[float]:
    """The total weight of each option: sum over weighers of multiplier * normalised raw."""
    totals = [0.0] * len(options)
    for weigher, multiplier in weighers:
        if multiplier == 0:
            continue
        raws = [weigher.raw(host, spec, candidate) for host, candidate in options]
        for i, weight in enumerate(normalise(raws)):
            totals[i] += multiplier * weight
    return totals

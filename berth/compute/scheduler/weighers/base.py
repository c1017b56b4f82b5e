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

import numpy as np

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState

__all__ = ["HostWeigher", "combine", "normalise", "totals", "weighing"]


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


def weighing(
    weighers: Sequence[tuple[HostWeigher, float]], spec: RequestSpec
) -> list[tuple[HostWeigher, float]]:
    """The weighers that can tell options of ``spec`` apart: one with no multiplier, or equal
    raw weights everywhere, adds 0.0 to every total."""
    return [
        (weigher, multiplier)
        for weigher, multiplier in weighers
        if multiplier != 0 and not weigher.same_for_every_host(spec)
    ]


def totals(raws: np.ndarray, multipliers: Sequence[float]) -> np.ndarray:
    """The total weight of each option (a row of ``raws``, a column per multiplier): the sum
    over columns of multiplier * normalised raw, added up in column order as ``normalise``
    and floats would (the same operations, so the same values, signed zeros included)."""
    found = np.zeros(len(raws))
    for column, multiplier in zip(raws.T, multipliers, strict=True):
        low, high = _bounds(column)
        spread = np.zeros(len(column)) if high == low else (column - low) / (high - low)
        found = found + multiplier * spread
    return found


def _bounds(column: np.ndarray) -> tuple[float, float]:
    """The lowest and highest of ``column``, for ``totals`` as Python's min and max are for
    ``normalise``."""
    if not len(column):
        return 0.0, 0.0
    low, high = float(column.min()), float(column.max())
    # With a NaN, numpy's propagate and Python's depend on where it is: Python's. Otherwise
    # they differ at most in which zero is the lowest (-0.0 == 0.0), which only tells the sign
    # of a zero spread, and a total adds it to +0.0 or to a number not zero: it never shows.
    if low != low:
        values = column.tolist()
        return min(values), max(values)
    return low, high


def combine(
    options: Sequence[tuple[HostState, Candidate]],
    spec: RequestSpec,
    weighers: Sequence[tuple[HostWeigher, float]],
) -> list[float]:
    """The total weight of each option: sum over weighers of multiplier * normalised raw."""
    used = weighing(weighers, spec)
    raws = np.array(
        [[weigher.raw(host, spec, c) for weigher, _ in used] for host, c in options], dtype=float
    ).reshape(len(options), len(used))
    return totals(raws, [m for _, m in used]).tolist()  # type: ignore[no-any-return]

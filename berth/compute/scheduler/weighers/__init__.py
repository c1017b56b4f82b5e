"""Host weighers: one module each, a NAME and a default multiplier (see ``base``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from berth.compute.scheduler.weighers.base import (
    HostWeigher,
    combine,
    normalise,
    totals,
    weighing,
)
from berth.compute.scheduler.weighers.build_failure import BuildFailureWeigher
from berth.compute.scheduler.weighers.cpu import CPUWeigher
from berth.compute.scheduler.weighers.disk import DiskWeigher
from berth.compute.scheduler.weighers.ram import RAMWeigher
from berth.compute.scheduler.weighers.soft_affinity import ServerGroupSoftAffinityWeigher
from berth.compute.scheduler.weighers.soft_anti_affinity import ServerGroupSoftAntiAffinityWeigher

__all__ = [
    "DEFAULT_WEIGHERS",
    "WEIGHERS",
    "BuildFailureWeigher",
    "CPUWeigher",
    "DiskWeigher",
    "HostWeigher",
    "RAMWeigher",
    "ServerGroupSoftAffinityWeigher",
    "ServerGroupSoftAntiAffinityWeigher",
    "build_weighers",
    "combine",
    "normalise",
    "totals",
    "weighing",
]

WEIGHERS: Final[Mapping[str, type[HostWeigher]]] = {
    cls.NAME: cls
    for cls in (
        RAMWeigher,
        CPUWeigher,
        DiskWeigher,
        BuildFailureWeigher,
        ServerGroupSoftAffinityWeigher,
        ServerGroupSoftAntiAffinityWeigher,
    )
}
DEFAULT_WEIGHERS: Final = tuple(WEIGHERS)


def build_weighers(
    names: Sequence[str], multipliers: Mapping[str, float]
) -> tuple[tuple[HostWeigher, float], ...]:
    """Each named weigher with its multiplier (the configured one, else its default). Raises
    ValueError for an unknown name, also among the multipliers' keys."""
    unknown = [n for n in (*names, *multipliers) if n not in WEIGHERS]
    if unknown:
        raise ValueError(
            f"unknown scheduler weigher(s): {', '.join(unknown)}; known: {', '.join(WEIGHERS)}"
        )
    return tuple(
        (WEIGHERS[n](), float(multipliers.get(n, WEIGHERS[n].DEFAULT_MULTIPLIER)))
        for n in dict.fromkeys(names)
    )

"""Why no host (or how few) could take an instance, as data, and as one line for a fault::

    0/12 hosts are available: Placement returned 12; AvailabilityZoneFilter removed 5
    (wrong-az: 5); ServerGroupAntiAffinityFilter removed 7 (host-in-group: 7)

``hosts`` (the N) counts every compute node the scheduler was shown, ``placement_hosts`` those
behind Placement's candidates; then each stage that removed hosts, in pipeline order, with its
reason codes, most frequent first. A host is removed by the first stage that leaves it no
candidate, with the reason given for the first of its candidates there. Besides the filters
(by their NAME) the stages are:

    HostState          unknown-host               Placement knows the node, the cells do not
                                                  (not yet discovered, or deleted)
    RequestCapacity    taken-by-earlier-instance  an earlier instance of this request used the
                                                  capacity the candidate counted on
    Claim              conflict                   every claim on the host failed (it changed
                                                  under us)

When Placement returned nothing the line can say why, once the caller has counted it (per
resource class, hosts short of it; per trait, hosts lacking it, ``!T`` for hosts having a
forbidden one): ``with_placement_shortfall``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "CLAIM",
    "CONFLICT",
    "HOST_STATE",
    "REQUEST_CAPACITY",
    "TAKEN",
    "UNKNOWN_HOST",
    "Diagnosis",
    "Recorder",
    "StageOutcome",
]

HOST_STATE: Final = "HostState"
UNKNOWN_HOST: Final = "unknown-host"
REQUEST_CAPACITY: Final = "RequestCapacity"
TAKEN: Final = "taken-by-earlier-instance"
CLAIM: Final = "Claim"
CONFLICT: Final = "conflict"


def _ranked(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


@dataclass(frozen=True, slots=True)
class StageOutcome:
    name: str
    removed: int
    # Reason code -> hosts, most first.
    reasons: tuple[tuple[str, int], ...]

    def render(self) -> str:
        detail = ", ".join(f"{code}: {n}" for code, n in self.reasons)
        return f"{self.name} removed {self.removed} ({detail})"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    hosts: int
    placement_hosts: int
    available: int
    stages: tuple[StageOutcome, ...] = ()
    # Per resource class / trait, how many hosts Placement could not use for it.
    shortfall_resources: tuple[tuple[str, int], ...] = ()
    shortfall_traits: tuple[tuple[str, int], ...] = ()
    seed: int | None = None

    def removed_by(self, stage: str) -> int:
        return sum(s.removed for s in self.stages if s.name == stage)

    def reasons(self, stage: str) -> dict[str, int]:
        return {code: n for s in self.stages if s.name == stage for code, n in s.reasons}

    def with_placement_shortfall(
        self, resources: Mapping[str, int], traits: Mapping[str, int] | None = None
    ) -> Diagnosis:
        """This diagnosis, saying why Placement returned no more hosts than it did."""
        return dataclasses.replace(
            self,
            shortfall_resources=_ranked({k: v for k, v in resources.items() if v}),
            shortfall_traits=_ranked({k: v for k, v in (traits or {}).items() if v}),
        )

    def render(self) -> str:
        parts = [f"Placement returned {self.placement_hosts}{self._shortfall()}"]
        parts += [stage.render() for stage in self.stages]
        return f"{self.available}/{self.hosts} hosts are available: " + "; ".join(parts)

    __str__ = render

    def _shortfall(self) -> str:
        items = [f"insufficient {rc}: {n}" for rc, n in self.shortfall_resources]
        for trait, n in self.shortfall_traits:
            if trait.startswith("!"):
                items.append(f"forbidden trait {trait[1:]}: {n}")
            else:
                items.append(f"missing trait {trait}: {n}")
        return f" ({', '.join(items)})" if items else ""

    def as_dict(self) -> dict[str, Any]:
        """For a fault's details or an API answer."""
        return {
            "hosts": self.hosts,
            "placement_hosts": self.placement_hosts,
            "available": self.available,
            "stages": [
                {"name": s.name, "removed": s.removed, "reasons": dict(s.reasons)}
                for s in self.stages
            ],
            "placement_shortfall": {
                "resources": dict(self.shortfall_resources),
                "traits": dict(self.shortfall_traits),
            },
            "seed": self.seed,
            "message": self.render(),
        }


class Recorder:
    """Counts removals while a pass runs; ``result`` freezes them into a Diagnosis."""

    def __init__(self, hosts: int, placement_hosts: int, seed: int | None = None) -> None:
        self._hosts = hosts
        self._placement_hosts = placement_hosts
        self._seed = seed
        self._stages: dict[str, Counter[str]] = {}

    def removed(self, stage: str, reason: str) -> None:
        self._stages.setdefault(stage, Counter())[reason] += 1

    def result(self, available: int) -> Diagnosis:
        stages = tuple(
            StageOutcome(name, sum(counts.values()), _ranked(counts))
            for name, counts in self._stages.items()
        )
        return Diagnosis(self._hosts, self._placement_hosts, available, stages, seed=self._seed)

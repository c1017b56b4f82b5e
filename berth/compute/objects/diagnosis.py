"""Why no host (or how few) could take an instance: the scheduler's diagnosis as a value.

It is made by the scheduler (``berth.compute.scheduler.diagnosis`` says what each stage and
reason code means), crosses the bus with a NoValidHost, and ends up in the server's fault.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.wire import Version, read, stamp


def ranked(counts: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
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
            shortfall_resources=ranked({k: v for k, v in resources.items() if v}),
            shortfall_traits=ranked({k: v for k, v in (traits or {}).items() if v}),
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

    # 1.0: first versioned form.
    VERSION = Version(1, 0)

    def to_json(self) -> dict[str, Any]:
        """For the bus, a fault's details or an API answer (``message`` is the rendered line)."""
        return stamp(
            Diagnosis.VERSION,
            {
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
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Diagnosis:
        document = read("Diagnosis", Diagnosis.VERSION, document)
        shortfall = document.get("placement_shortfall") or {}
        return cls(
            hosts=int(document["hosts"]),
            placement_hosts=int(document["placement_hosts"]),
            available=int(document["available"]),
            stages=tuple(
                StageOutcome(s["name"], int(s["removed"]), tuple(s["reasons"].items()))
                for s in document.get("stages") or ()
            ),
            shortfall_resources=tuple((shortfall.get("resources") or {}).items()),
            shortfall_traits=tuple((shortfall.get("traits") or {}).items()),
            seed=document.get("seed"),
        )

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

from collections import Counter
from typing import Final

from berth.compute.objects.diagnosis import Diagnosis, StageOutcome, ranked

__all__ = [
    "CLAIM",
    "CONFLICT",
    "HOST_STATE",
    "REQUEST_CAPACITY",
    "TAKEN",
    "UNKNOWN_HOST",
    "Recorder",
]

HOST_STATE: Final = "HostState"
UNKNOWN_HOST: Final = "unknown-host"
REQUEST_CAPACITY: Final = "RequestCapacity"
TAKEN: Final = "taken-by-earlier-instance"
CLAIM: Final = "Claim"
CONFLICT: Final = "conflict"


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
            StageOutcome(name, sum(counts.values()), ranked(counts))
            for name, counts in self._stages.items()
        )
        return Diagnosis(self._hosts, self._placement_hosts, available, stages, seed=self._seed)

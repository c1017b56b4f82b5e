"""A what-if: what the scheduler would do with a request now, without claiming anything.

The scheduler answers it (``berth.compute.scheduler.what_if``): per instance the selection it
would claim and its alternates, or the diagnosis when an instance fits nowhere; and per host
that Placement and the filters leave, how many more instances of the request fit there now
(``berth.compute.scheduler.fit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.selection import Selection
from berth.compute.objects.wire import Version, read, stamp


@dataclass(frozen=True, slots=True)
class HostCapacity:
    host: str
    node: str
    node_uuid: str
    cell_uuid: str
    availability_zone: str
    # How many more instances of the request fit on the host now.
    instances: int
    # False when the count is a lower bound (the exact search ran out of budget).
    exact: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "node": self.node,
            "node_uuid": self.node_uuid,
            "cell_uuid": self.cell_uuid,
            "availability_zone": self.availability_zone,
            "instances": self.instances,
            "exact": self.exact,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> HostCapacity:
        return cls(
            host=document["host"],
            node=document["node"],
            node_uuid=document["node_uuid"],
            cell_uuid=document["cell_uuid"],
            availability_zone=document["availability_zone"],
            instances=int(document["instances"]),
            exact=bool(document.get("exact", True)),
        )


@dataclass(frozen=True, slots=True)
class WhatIf:
    # Per instance: the selection the scheduler would claim, then its alternates; empty when
    # an instance fits nowhere (then ``diagnosis`` and ``message`` say why).
    selections: tuple[tuple[Selection, ...], ...]
    # Every host with room for at least one more instance.
    hosts: tuple[HostCapacity, ...]
    # Compute nodes Placement returned candidates on.
    placement_hosts: int
    # The instances must share one host (an affinity group with no member yet): the fleet
    # holds as many as its roomiest host, not the sum.
    together: bool = False
    # False when Placement would not list every candidate (its work budget): the counts are
    # then lower bounds, from the candidates it did list.
    complete: bool = True
    seed: int | None = None
    diagnosis: Diagnosis | None = None
    message: str | None = None

    # 1.0: first form.
    VERSION = Version(1, 0)

    @property
    def fits(self) -> bool:
        return bool(self.selections)

    def to_json(self) -> dict[str, Any]:
        return stamp(
            WhatIf.VERSION,
            {
                "selections": [[s.to_json() for s in chosen] for chosen in self.selections],
                "hosts": [h.to_json() for h in self.hosts],
                "placement_hosts": self.placement_hosts,
                "together": self.together,
                "complete": self.complete,
                "seed": self.seed,
                "diagnosis": None if self.diagnosis is None else self.diagnosis.to_json(),
                "message": self.message,
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> WhatIf:
        document = read("WhatIf", WhatIf.VERSION, document)
        diagnosis = document.get("diagnosis")
        return cls(
            selections=tuple(
                tuple(Selection.from_json(s) for s in chosen) for chosen in document["selections"]
            ),
            hosts=tuple(HostCapacity.from_json(h) for h in document["hosts"]),
            placement_hosts=int(document["placement_hosts"]),
            together=bool(document.get("together")),
            complete=bool(document.get("complete", True)),
            seed=document.get("seed"),
            diagnosis=None if diagnosis is None else Diagnosis.from_json(diagnosis),
            message=document.get("message"),
        )

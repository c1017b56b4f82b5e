"""A Selection: a host for one instance, with the allocation to claim there.

The scheduler answers one list per instance: the claimed selection first, then its alternates in
the same cell (seed 5). Each carries its own allocation request, as Placement gave it, and the
mapping of request groups to providers, turned per port into the providers its binding profile
names (seed 4, "placement does the mapping").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.wire import Version, read, stamp


@dataclass(frozen=True, slots=True)
class Selection:
    instance_uuid: str
    host: str
    node: str
    node_uuid: str
    cell_uuid: str
    # The allocation request as Placement gave it: {"allocations": {rp: {"resources": ...}}, ...}.
    allocation_request: Mapping[str, Any]
    allocation_request_version: str
    # Request group suffix -> provider uuids.
    mappings: Mapping[str, tuple[str, ...]]
    # Port id -> request group id -> provider uuid.
    port_allocations: Mapping[str, Mapping[str, str]]
    weight: float = 0.0

    # 1.0: first versioned form.
    VERSION = Version(1, 0)

    @property
    def allocations(self) -> dict[str, Any]:
        """Provider uuid -> {"resources": {class: amount}}, for the claim's body."""
        return dict(self.allocation_request["allocations"])

    def for_instance(
        self, instance_uuid: str, port_allocations: Mapping[str, Mapping[str, str]]
    ) -> Selection:
        """The same host and allocation for another instance of the request, with its own ports."""
        return Selection(
            instance_uuid, self.host, self.node, self.node_uuid, self.cell_uuid,
            self.allocation_request, self.allocation_request_version, self.mappings,
            port_allocations, self.weight,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return stamp(
            Selection.VERSION,
            {
                "instance_uuid": self.instance_uuid,
                "host": self.host,
                "node": self.node,
                "node_uuid": self.node_uuid,
                "cell_uuid": self.cell_uuid,
                "allocation_request": dict(self.allocation_request),
                "allocation_request_version": self.allocation_request_version,
                "mappings": {k: list(v) for k, v in self.mappings.items()},
                "port_allocations": {p: dict(g) for p, g in self.port_allocations.items()},
                "weight": self.weight,
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Selection:
        document = read("Selection", Selection.VERSION, document)
        return cls(
            instance_uuid=document["instance_uuid"],
            host=document["host"],
            node=document["node"],
            node_uuid=document["node_uuid"],
            cell_uuid=document["cell_uuid"],
            allocation_request=dict(document["allocation_request"]),
            allocation_request_version=document["allocation_request_version"],
            mappings={k: tuple(v) for k, v in document["mappings"].items()},
            port_allocations={p: dict(g) for p, g in document["port_allocations"].items()},
            weight=float(document.get("weight", 0.0)),
        )

"""What the scheduler knows of one compute node, read from its cell (and the API database's
aggregates), and how it changes when an instance of the request being scheduled lands on it.

One HostState per compute node: ``node_uuid`` is the node's root provider in Placement, which is
how a Candidate finds its host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from berth.compute.scheduler.candidates import Candidate

__all__ = ["Aggregate", "HostState", "SupportedInstance"]

# (architecture, hypervisor type, VM mode), e.g. ("x86_64", "kvm", "hvm").
SupportedInstance = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Aggregate:
    uuid: str
    name: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HostState:
    host: str
    node: str
    node_uuid: str
    cell_uuid: str
    # The host's zone (the default zone when no zone aggregate holds it).
    availability_zone: str = "nova"
    # The compute service is disabled by an operator / has stopped reporting.
    disabled: bool = False
    up: bool = True
    free_vcpus: int = 0
    free_ram_mb: int = 0
    free_disk_gb: int = 0
    aggregates: tuple[Aggregate, ...] = ()
    # Recent build failures (reset by a success); a failing host sinks in the ranking.
    failed_builds: int = 0
    # Uuids of the instances on the host.
    instances: frozenset[str] = frozenset()
    supported_instances: tuple[SupportedInstance, ...] = ()
    hypervisor_type: str = ""
    # Dotted version as integers, e.g. (8, 0, 0).
    hypervisor_version: tuple[int, ...] = ()
    # Physical function device name -> free virtual functions.
    free_vfs: Mapping[str, int] = field(default_factory=dict)
    # Provider uuid (the bandwidth provider of a PF) -> PF device name.
    pf_providers: Mapping[str, str] = field(default_factory=dict)

    def aggregate_metadata(self, key: str) -> set[str]:
        """Every value ``key`` has in the host's aggregates (a value may list several, comma
        separated)."""
        values: set[str] = set()
        for aggregate in self.aggregates:
            if key in aggregate.metadata:
                values.update(v.strip() for v in aggregate.metadata[key].split(","))
        return values

    def consume(
        self, instance_uuid: str, candidate: Candidate, vfs: Mapping[str, int]
    ) -> HostState:
        """The host after ``instance_uuid`` lands on it with ``candidate``, taking ``vfs`` (PF
        device name -> virtual functions)."""
        free_vfs = dict(self.free_vfs)
        for device, n in vfs.items():
            free_vfs[device] = free_vfs.get(device, 0) - n
        return dataclasses.replace(
            self,
            free_vcpus=self.free_vcpus - candidate.host_amount("VCPU"),
            free_ram_mb=self.free_ram_mb - candidate.host_amount("MEMORY_MB"),
            free_disk_gb=self.free_disk_gb - candidate.host_amount("DISK_GB"),
            instances=self.instances | {instance_uuid},
            free_vfs=free_vfs,
        )

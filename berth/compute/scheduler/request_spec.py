"""What the scheduler is asked to place: a RequestSpec and the values it is made of.

Frozen values, built by the compute API and the super-conductor from a server's flavor, image,
ports (fetched or created *before* scheduling, with their resource requests) and hints; the same
RequestSpec is reused by every later move of the server. Nothing here talks to a service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "AFFINITY",
    "ANTI_AFFINITY",
    "SOFT_AFFINITY",
    "SOFT_ANTI_AFFINITY",
    "Destination",
    "Flavor",
    "Image",
    "PortRequest",
    "RequestSpec",
    "SchedulerHints",
    "ServerGroup",
]

Policy = Literal["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"]
AFFINITY: Final = "affinity"
ANTI_AFFINITY: Final = "anti-affinity"
SOFT_AFFINITY: Final = "soft-affinity"
SOFT_ANTI_AFFINITY: Final = "soft-anti-affinity"


@dataclass(frozen=True, slots=True)
class Flavor:
    id: str
    name: str
    vcpus: int
    memory_mb: int
    root_gb: int = 0
    ephemeral_gb: int = 0
    swap_mb: int = 0
    extra_specs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Image:
    id: str
    # Image properties as the image service stores them (``hw_architecture``,
    # ``img_hv_type``, ``trait:HW_CPU_X86_AVX2`` = ``required``, ...).
    properties: Mapping[str, str] = field(default_factory=dict)
    min_disk: int = 0
    min_ram: int = 0


@dataclass(frozen=True, slots=True)
class PortRequest:
    """A port of the server, as the network service described it before scheduling.

    ``resource_request`` has the Networking API's port-resource-request-groups shape::

        {"request_groups": [{"id": G, "required": [T, "in:A,B", ...],
                             "resources": {RC: N, ...}}, ...],
         "same_subtree": [G, ...]}

    and is empty when the port asks nothing of Placement. ``segment_aggregates`` are the
    Placement aggregates (one per segment, same uuid) of the segments of a routed network the
    port may land in; empty means the port does not constrain the host.
    """

    port_id: str
    resource_request: Mapping[str, Any] = field(default_factory=dict)
    segment_aggregates: tuple[str, ...] = ()
    vnic_type: str = "normal"

    @property
    def request_groups(self) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.resource_request.get("request_groups") or ())

    @property
    def same_subtree(self) -> tuple[str, ...]:
        return tuple(self.resource_request.get("same_subtree") or ())


@dataclass(frozen=True, slots=True)
class ServerGroup:
    uuid: str
    policy: Policy
    # One entry per member already placed (a host appears once per member on it).
    hosts: tuple[str, ...] = ()
    members: tuple[str, ...] = ()
    # The anti-affinity rule ``max_server_per_host`` (1 when absent).
    max_server_per_host: int = 1

    def members_on(self, host: str) -> int:
        return self.hosts.count(host)

    def with_member(self, instance_uuid: str, host: str) -> ServerGroup:
        return dataclasses.replace(
            self, hosts=(*self.hosts, host), members=(*self.members, instance_uuid)
        )


@dataclass(frozen=True, slots=True)
class SchedulerHints:
    group: str | None = None
    # Instance uuids the server must share a host with / must not share a host with.
    same_host: tuple[str, ...] = ()
    different_host: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Destination:
    """Where an operator (or a move operation) asks the server to go; every field optional."""

    host: str | None = None
    node: str | None = None
    # The compute node's provider uuid: pins the Placement query to that tree (in_tree).
    node_uuid: str | None = None
    cell_uuid: str | None = None
    # Each entry is an any-of set of aggregate uuids; all entries must hold.
    aggregates: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class RequestSpec:
    instance_uuids: tuple[str, ...]
    project_id: str
    user_id: str
    flavor: Flavor
    image: Image
    ports: tuple[PortRequest, ...] = ()
    availability_zone: str | None = None
    hints: SchedulerHints = SchedulerHints()
    server_group: ServerGroup | None = None
    # Hosts never to choose: the source of a migration, hosts that already failed this build.
    ignore_hosts: frozenset[str] = frozenset()
    destination: Destination | None = None
    # The root disk lives in the volume service, not on the host.
    boot_from_volume: bool = False

    def __post_init__(self) -> None:
        if not self.instance_uuids:
            raise ValueError("a RequestSpec needs at least one instance uuid")
        if len(set(self.instance_uuids)) != len(self.instance_uuids):
            raise ValueError("instance uuids of a RequestSpec must be distinct")

    @property
    def num_instances(self) -> int:
        return len(self.instance_uuids)

    def policy(self) -> str | None:
        """The server group's policy, or None when the server is in no group."""
        return None if self.server_group is None else self.server_group.policy

"""What the scheduler is asked to place: a RequestSpec and the values it is made of.

Frozen values, built by the compute API and the super-conductor from a server's flavor, image,
ports (fetched or created *before* scheduling, with their resource requests) and hints; the same
RequestSpec is reused by every later move of the server. Nothing here talks to a service.

``RequestSpec.to_json`` / ``from_json`` are how a spec is kept in the API database and travels to
the scheduler (versioned, see ``wire``): the API writes one when a server is asked for, the
super-conductor adds the ports it found or made before it asks the scheduler.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from berth.compute.objects.wire import Version, read, stamp

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
    # Seconds the server may wait for room when it fits nowhere (``berth.compute.queueing``).
    queue_timeout: int | None = None


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

    # 1.0: first versioned form (same fields as the unversioned documents before it).
    # 1.1: hints.queue_timeout.
    VERSION = Version(1, 1)

    def to_json(self) -> dict[str, Any]:
        """A JSON document (tuples become lists, ``ignore_hosts`` a sorted list), every field
        in declaration order, as ``dataclasses.asdict`` gives them; written out field by field
        because ``asdict``'s generic walk (a deep copy of every leaf) cost more than the rest
        of a spec's trip through the bus (a build writes and sends a spec twice)."""
        flavor, image, hints = self.flavor, self.image, self.hints
        group, destination = self.server_group, self.destination
        return stamp(
            RequestSpec.VERSION,
            {
                "instance_uuids": list(self.instance_uuids),
                "project_id": self.project_id,
                "user_id": self.user_id,
                "flavor": {
                    "id": flavor.id,
                    "name": flavor.name,
                    "vcpus": flavor.vcpus,
                    "memory_mb": flavor.memory_mb,
                    "root_gb": flavor.root_gb,
                    "ephemeral_gb": flavor.ephemeral_gb,
                    "swap_mb": flavor.swap_mb,
                    "extra_specs": _lists(flavor.extra_specs),
                },
                "image": {
                    "id": image.id,
                    "properties": _lists(image.properties),
                    "min_disk": image.min_disk,
                    "min_ram": image.min_ram,
                },
                "ports": [
                    {
                        "port_id": port.port_id,
                        "resource_request": _lists(port.resource_request),
                        "segment_aggregates": list(port.segment_aggregates),
                        "vnic_type": port.vnic_type,
                    }
                    for port in self.ports
                ],
                "availability_zone": self.availability_zone,
                "hints": {
                    "group": hints.group,
                    "same_host": list(hints.same_host),
                    "different_host": list(hints.different_host),
                    "queue_timeout": hints.queue_timeout,
                },
                "server_group": None
                if group is None
                else {
                    "uuid": group.uuid,
                    "policy": group.policy,
                    "hosts": list(group.hosts),
                    "members": list(group.members),
                    "max_server_per_host": group.max_server_per_host,
                },
                "ignore_hosts": sorted(self.ignore_hosts),
                "destination": None
                if destination is None
                else {
                    "host": destination.host,
                    "node": destination.node,
                    "node_uuid": destination.node_uuid,
                    "cell_uuid": destination.cell_uuid,
                    "aggregates": [list(any_of) for any_of in destination.aggregates],
                },
                "boot_from_volume": self.boot_from_volume,
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> RequestSpec:
        document = read("RequestSpec", RequestSpec.VERSION, document)
        group = document.get("server_group")
        hints = document.get("hints") or {}
        destination = document.get("destination")
        flavor = document["flavor"]
        image = document["image"]
        return cls(
            instance_uuids=tuple(document["instance_uuids"]),
            project_id=document["project_id"],
            user_id=document["user_id"],
            flavor=Flavor(
                **{**_known(Flavor, flavor), "extra_specs": dict(flavor.get("extra_specs") or {})}
            ),
            image=Image(
                **{**_known(Image, image), "properties": dict(image.get("properties") or {})}
            ),
            ports=tuple(
                PortRequest(
                    port_id=p["port_id"],
                    resource_request=p.get("resource_request") or {},
                    segment_aggregates=tuple(p.get("segment_aggregates") or ()),
                    vnic_type=p.get("vnic_type", "normal"),
                )
                for p in document.get("ports") or ()
            ),
            availability_zone=document.get("availability_zone"),
            hints=SchedulerHints(
                group=hints.get("group"),
                same_host=tuple(hints.get("same_host") or ()),
                different_host=tuple(hints.get("different_host") or ()),
                queue_timeout=hints.get("queue_timeout"),
            ),
            server_group=(
                ServerGroup(
                    uuid=group["uuid"],
                    policy=cast(Policy, group["policy"]),
                    hosts=tuple(group.get("hosts") or ()),
                    members=tuple(group.get("members") or ()),
                    max_server_per_host=int(group.get("max_server_per_host") or 1),
                )
                if group
                else None
            ),
            ignore_hosts=frozenset(document.get("ignore_hosts") or ()),
            destination=(
                Destination(
                    **{
                        **_known(Destination, destination),
                        "aggregates": tuple(tuple(a) for a in destination.get("aggregates") or ()),
                    }
                )
                if destination
                else None
            ),
            boot_from_volume=bool(document.get("boot_from_volume")),
        )


def _known(kind: type, document: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of ``document`` that ``kind`` has: a newer writer's extra fields are ignored."""
    names = {f.name for f in dataclasses.fields(kind)}
    return {k: v for k, v in document.items() if k in names}


def _lists(value: Any) -> Any:
    """``value`` with every dict, list and tuple in it copied as dicts and lists (what a
    document holds as its own)."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value

"""The fleet as the capacity view shows it: one row per compute node, joining what Placement holds
(every provider of the node's tree, with capacity and usage) to what Compute holds (the node's
cell, its service's state, its aggregates and zone, how many servers it runs).

Pure: the readers in ``sources`` gather the inputs; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COMPUTE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
EGRESS = "NET_BW_EGR_KILOBIT_PER_SEC"
INGRESS = "NET_BW_IGR_KILOBIT_PER_SEC"
PACKET_RATE_CLASSES = (
    "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
)
PHYSNET_PREFIX = "CUSTOM_PHYSNET_"


@dataclass(frozen=True, slots=True)
class Amount:
    """One resource class on one provider (or summed): what is allocated of what can be."""

    used: int
    capacity: int

    @property
    def share(self) -> float:
        """How full it is, 0 to 1 (more when an inventory shrank under its allocations)."""
        return self.used / self.capacity if self.capacity else 0.0

    def __add__(self, other: Amount) -> Amount:
        return Amount(self.used + other.used, self.capacity + other.capacity)

    def to_json(self) -> dict[str, int]:
        return {"used": self.used, "capacity": self.capacity}


@dataclass(frozen=True, slots=True)
class ProviderUsage:
    """A resource provider as Placement holds it: each class's usable capacity
    (``(total - reserved) * allocation_ratio``) and what is allocated of it."""

    uuid: str
    name: str
    parent_uuid: str | None
    root_uuid: str
    amounts: Mapping[str, Amount]
    traits: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """A compute node as Compute holds it (its uuid is its root provider's)."""

    uuid: str
    host: str
    hypervisor_hostname: str
    cell: str
    enabled: bool
    up: bool


@dataclass(frozen=True, slots=True)
class Device:
    """A bridge or physical function: a provider of the node's tree with bandwidth."""

    name: str
    physnets: tuple[str, ...]
    egress: Amount | None
    ingress: Amount | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "physnets": list(self.physnets),
            "egress": None if self.egress is None else self.egress.to_json(),
            "ingress": None if self.ingress is None else self.ingress.to_json(),
        }


@dataclass(frozen=True, slots=True)
class HostRow:
    node: NodeRecord
    zone: str
    aggregates: tuple[str, ...]
    servers: int
    # VCPU, MEMORY_MB, DISK_GB of the compute node provider (absent: no such inventory).
    compute: Mapping[str, Amount]
    devices: tuple[Device, ...] = ()
    # Per packet-rate class, summed over the node's agents.
    packet_rate: Mapping[str, Amount] = field(default_factory=dict)

    @property
    def physnets(self) -> frozenset[str]:
        return frozenset(p for d in self.devices for p in d.physnets)

    def bandwidth_share(self) -> float:
        """The fullest direction of the fullest device: what sorting by bandwidth orders by."""
        shares = [a.share for d in self.devices for a in (d.egress, d.ingress) if a is not None]
        return max(shares, default=0.0)

    def packet_rate_share(self) -> float:
        return max((a.share for a in self.packet_rate.values()), default=0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.node.host,
            "node": self.node.hypervisor_hostname,
            "uuid": self.node.uuid,
            "cell": self.node.cell,
            "zone": self.zone,
            "aggregates": list(self.aggregates),
            "enabled": self.node.enabled,
            "up": self.node.up,
            "servers": self.servers,
            "compute": {rc: a.to_json() for rc, a in self.compute.items()},
            "devices": [d.to_json() for d in self.devices],
            "packet_rate": {rc: a.to_json() for rc, a in self.packet_rate.items()},
        }


def host_rows(
    providers: Iterable[ProviderUsage],
    nodes: Iterable[NodeRecord],
    aggregates_of_host: Mapping[str, Sequence[str]],
    zone_of_host: Mapping[str, str],
    servers_of_host: Mapping[str, int],
) -> list[HostRow]:
    """A row per compute node, in host name order. A node Placement does not know (yet) shows
    no capacity; providers of no compute node (a routed network's segments) are left out."""
    trees: dict[str, list[ProviderUsage]] = {}
    for provider in providers:
        trees.setdefault(provider.root_uuid, []).append(provider)
    rows = []
    for node in nodes:
        tree = trees.get(node.uuid, [])
        root = next((p for p in tree if p.uuid == node.uuid), None)
        compute = {} if root is None else {
            rc: root.amounts[rc] for rc in COMPUTE_CLASSES if rc in root.amounts
        }  # fmt: skip
        rows.append(
            HostRow(
                node=node,
                zone=zone_of_host.get(node.host, ""),
                aggregates=tuple(sorted(aggregates_of_host.get(node.host, ()))),
                servers=servers_of_host.get(node.host, 0),
                compute=compute,
                devices=_devices(tree, root),
                packet_rate=_packet_rate(tree),
            )
        )
    rows.sort(key=lambda row: (row.node.host, row.node.hypervisor_hostname))
    return rows


def _devices(tree: Sequence[ProviderUsage], root: ProviderUsage | None) -> tuple[Device, ...]:
    devices = []
    for provider in tree:
        if EGRESS not in provider.amounts and INGRESS not in provider.amounts:
            continue
        devices.append(
            Device(
                name=_below(provider.name, root),
                physnets=tuple(
                    sorted(
                        t.removeprefix(PHYSNET_PREFIX).lower()
                        for t in provider.traits
                        if t.startswith(PHYSNET_PREFIX)
                    )
                ),
                egress=provider.amounts.get(EGRESS),
                ingress=provider.amounts.get(INGRESS),
            )
        )
    return tuple(sorted(devices, key=lambda d: d.name))


def _below(name: str, root: ProviderUsage | None) -> str:
    """A nested provider's name without its compute node's in front (``Open vSwitch
    agent:br-ex`` for ``cn1:Open vSwitch agent:br-ex``): the rest is what the row adds. Only
    for showing; nothing is looked up by it."""
    if root is not None and name.startswith(root.name + ":"):
        return name[len(root.name) + 1 :]
    return name


def _packet_rate(tree: Sequence[ProviderUsage]) -> dict[str, Amount]:
    summed: dict[str, Amount] = {}
    for provider in tree:
        for rc in PACKET_RATE_CLASSES:
            if rc in provider.amounts:
                summed[rc] = summed.get(rc, Amount(0, 0)) + provider.amounts[rc]
    return summed


def totals(rows: Iterable[HostRow]) -> dict[str, Amount]:
    """Per resource class, the rows' amounts summed (bandwidth over every device)."""
    summed: dict[str, Amount] = {}

    def add(rc: str, amount: Amount) -> None:
        summed[rc] = summed.get(rc, Amount(0, 0)) + amount

    for row in rows:
        for rc, amount in (*row.compute.items(), *row.packet_rate.items()):
            add(rc, amount)
        for device in row.devices:
            if device.egress is not None:
                add(EGRESS, device.egress)
            if device.ingress is not None:
                add(INGRESS, device.ingress)
    return summed

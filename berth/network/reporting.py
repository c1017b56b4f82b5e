"""What Placement must show of the network: the providers each agent's configuration describes and
those of routed-network segments, computed as data (no I/O) for ``placement_sync`` to apply.

Under the compute node provider of each host (found by name, made by the compute side):

    <host>                                  compute node (not ours)
    └── <host>:Open vSwitch agent           packet rate; CUSTOM_VNIC_TYPE_NORMAL
        └── <host>:Open vSwitch agent:br-ex NET_BW_EGR/IGR; CUSTOM_PHYSNET_*, CUSTOM_VNIC_TYPE_NORMAL
    └── <host>:NIC Switch agent             CUSTOM_VNIC_TYPE_DIRECT, _MACVTAP, _DIRECT_PHYSICAL
        └── <host>:NIC Switch agent:ens1f0  NET_BW_EGR/IGR; CUSTOM_PHYSNET_*, VNIC type traits

Every segment of a routed network is a root provider (its uuid the segment's) with IPV4_ADDRESS
inventory (free addresses: total minus used as ``reserved``) in an aggregate of the same uuid, and
the compute node of every host that reaches the segment is put in that aggregate.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from berth.network.traits import SEGMENT_TRAIT, physnet_trait, vnic_type_trait

OVS = "Open vSwitch agent"
SRIOV = "NIC Switch agent"
OVS_VNIC_TYPES = ("normal",)
SRIOV_VNIC_TYPES = ("direct", "macvtap", "direct-physical")
OVERLAYS = ("vxlan", "geneve")

# Provider uuids derive from names, so every network service instance computes the same ones.
_NAMESPACE = uuid.UUID("6b2c0a4e-5f6d-4f43-9c41-2f2d7f8e3b10")


def provider_uuid(name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, name))


@dataclass(frozen=True)
class AgentState:
    """What reporting needs of one agent."""

    agent_type: str
    host: str
    configurations: Mapping[str, Any]


@dataclass(frozen=True)
class SegmentState:
    id: str
    network_type: str
    physical_network: str | None
    routed: bool  # its network has subnets on segments
    ipv4_total: int = 0
    ipv4_used: int = 0


@dataclass(frozen=True)
class DesiredProvider:
    uuid: str
    name: str
    # Exactly one of: the parent's uuid, or the host whose compute node is the parent.
    parent_uuid: str | None
    host: str | None
    inventories: Mapping[str, Mapping[str, int | float]] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()


def _inventory(total: int, reserved: int = 0) -> dict[str, int | float]:
    return {
        "total": total,
        "reserved": min(reserved, total),
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }


def _bandwidths(config: Mapping[str, Any], device: str) -> dict[str, dict[str, int | float]]:
    given = config.get("resource_provider_bandwidths", {}).get(device, {})
    found = {}
    for direction, rc in (
        ("egress", "NET_BW_EGR_KILOBIT_PER_SEC"),
        ("ingress", "NET_BW_IGR_KILOBIT_PER_SEC"),
    ):
        kbps = int(given.get(direction) or 0)
        if kbps > 0:
            found[rc] = _inventory(kbps)
    return found


def _packet_rate(config: Mapping[str, Any]) -> dict[str, dict[str, int | float]]:
    both = config.get("resource_provider_packet_processing_without_direction")
    if both:
        return {"NET_PACKET_RATE_KILOPACKET_PER_SEC": _inventory(int(both))}
    directed = config.get("resource_provider_packet_processing_with_direction") or {}
    found = {}
    for direction, rc in (
        ("egress", "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC"),
        ("ingress", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC"),
    ):
        kpps = int(directed.get(direction) or 0)
        if kpps > 0:
            found[rc] = _inventory(kpps)
    return found


def physnets_of_devices(agent: AgentState) -> dict[str, set[str]]:
    """For each bridge (OVS) or physical function (SR-IOV), the physical networks it reaches."""
    found: dict[str, set[str]] = {}
    if agent.agent_type == OVS:
        for physnet, bridge in agent.configurations.get("bridge_mappings", {}).items():
            found.setdefault(bridge, set()).add(physnet)
    elif agent.agent_type == SRIOV:
        for physnet, devices in agent.configurations.get("device_mappings", {}).items():
            for device in devices:
                found.setdefault(device, set()).add(physnet)
    return found


def vnic_types_of(agent: AgentState) -> tuple[str, ...]:
    default = OVS_VNIC_TYPES if agent.agent_type == OVS else SRIOV_VNIC_TYPES
    return tuple(agent.configurations.get("supported_vnic_types") or default)


def agent_providers(agent: AgentState) -> list[DesiredProvider]:
    """The agent's provider under its host's compute node, and one per configured device."""
    name = f"{agent.host}:{agent.agent_type}"
    vnic = frozenset(vnic_type_trait(v) for v in vnic_types_of(agent))
    top = DesiredProvider(
        uuid=provider_uuid(name),
        name=name,
        parent_uuid=None,
        host=agent.host,
        inventories=_packet_rate(agent.configurations) if agent.agent_type == OVS else {},
        traits=vnic,
    )
    physnets = physnets_of_devices(agent)
    devices = sorted(agent.configurations.get("resource_provider_bandwidths", {}))
    children = [
        DesiredProvider(
            uuid=provider_uuid(f"{name}:{device}"),
            name=f"{name}:{device}",
            parent_uuid=top.uuid,
            host=None,
            inventories=_bandwidths(agent.configurations, device),
            traits=vnic | {physnet_trait(p) for p in physnets.get(device, ())},
        )
        for device in devices
    ]
    return [top, *children]


def reaches(agent: AgentState, segment: SegmentState) -> bool:
    """Whether the agent's host can carry traffic of the segment."""
    if segment.network_type in OVERLAYS:
        return agent.agent_type == OVS and segment.network_type in agent.configurations.get(
            "tunnel_types", ()
        )
    if segment.physical_network is None:
        return False
    return any(segment.physical_network in nets for nets in physnets_of_devices(agent).values())


def segment_provider(segment: SegmentState) -> DesiredProvider:
    inventories = (
        {"IPV4_ADDRESS": _inventory(segment.ipv4_total, segment.ipv4_used)}
        if segment.ipv4_total
        else {}
    )
    return DesiredProvider(
        uuid=segment.id,
        name=f"segment:{segment.id}",
        parent_uuid=None,
        host=None,
        inventories=inventories,
        traits=frozenset({SEGMENT_TRAIT}),
        aggregates=frozenset({segment.id}),
    )


@dataclass(frozen=True)
class Desired:
    providers: list[DesiredProvider]
    # Host -> the segment aggregates its compute node must be in (every host with an agent).
    host_aggregates: dict[str, frozenset[str]]
    segment_ids: frozenset[str]


def desired(agents: Iterable[AgentState], segments: Sequence[SegmentState]) -> Desired:
    agents = list(agents)
    routed = [s for s in segments if s.routed]
    providers = [p for agent in agents for p in agent_providers(agent)]
    providers += [segment_provider(s) for s in routed]
    host_aggregates: dict[str, set[str]] = {agent.host: set() for agent in agents}
    for agent in agents:
        host_aggregates[agent.host] |= {s.id for s in routed if reaches(agent, s)}
    return Desired(
        providers=providers,
        host_aggregates={h: frozenset(a) for h, a in host_aggregates.items()},
        segment_ids=frozenset(s.id for s in routed),
    )

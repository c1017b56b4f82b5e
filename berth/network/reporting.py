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

import functools
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from berth.network.model import OVS_AGENT, SRIOV_AGENT, Agent, Segment
from berth.network.traits import SEGMENT_TRAIT, physnet_trait, vnic_type_trait

# Provider uuids derive from names, so every network service instance computes the same ones.
_NAMESPACE = uuid.UUID("6b2c0a4e-5f6d-4f43-9c41-2f2d7f8e3b10")


# Every binding works out its host's providers (a name-based UUID each: a SHA-1 and a UUID
# object); a cloud's provider names are few enough to keep.
@functools.lru_cache(maxsize=65536)
def provider_uuid(name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, name))


@dataclass(frozen=True)
class SegmentState:
    segment: Segment
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
    # The bridge or physical function an agent's child provider stands for.
    device: str | None = None


def _inventory(total: int, reserved: int = 0) -> dict[str, int | float]:
    return {
        "total": total,
        "reserved": min(reserved, total),
        "min_unit": 1,
        "max_unit": total,
        "step_size": 1,
        "allocation_ratio": 1.0,
    }


def _positive(amounts: Mapping[str, int]) -> dict[str, dict[str, int | float]]:
    return {rc: _inventory(amount) for rc, amount in amounts.items() if amount > 0}


def physnets_of_devices(agent: Agent) -> dict[str, set[str]]:
    """For each bridge (OVS) or physical function (SR-IOV), the physical networks it reaches."""
    found: dict[str, set[str]] = {}
    config = agent.configuration
    if agent.agent_type == OVS_AGENT:
        for physnet, bridge in config.bridge_mappings.items():
            found.setdefault(bridge, set()).add(physnet)
    elif agent.agent_type == SRIOV_AGENT:
        for physnet, devices in config.device_mappings.items():
            for device in devices:
                found.setdefault(device, set()).add(physnet)
    return found


def agent_providers(agent: Agent) -> list[DesiredProvider]:
    """The agent's provider under its host's compute node, and one per configured device."""
    name = f"{agent.host}:{agent.agent_type}"
    vnic = frozenset(vnic_type_trait(v) for v in agent.vnic_types)
    rate = agent.configuration.packet_rate
    packet_rate = (
        _positive({
            "NET_PACKET_RATE_KILOPACKET_PER_SEC": rate.any_kpps,
            "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": rate.egress_kpps,
            "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": rate.ingress_kpps,
        })
        if rate is not None and agent.agent_type == OVS_AGENT
        else {}
    )  # fmt: skip
    top = DesiredProvider(provider_uuid(name), name, None, agent.host, packet_rate, vnic)
    physnets = physnets_of_devices(agent)
    children = [
        DesiredProvider(
            uuid=provider_uuid(f"{name}:{device}"),
            name=f"{name}:{device}",
            parent_uuid=top.uuid,
            host=None,
            inventories=_positive(
                {
                    "NET_BW_EGR_KILOBIT_PER_SEC": bandwidth.egress_kbps,
                    "NET_BW_IGR_KILOBIT_PER_SEC": bandwidth.ingress_kbps,
                }
            ),
            traits=vnic | {physnet_trait(p) for p in physnets.get(device, ())},
            device=device,
        )
        for device, bandwidth in sorted(agent.configuration.bandwidths.items())
    ]
    return [top, *children]


def segment_provider(state: SegmentState) -> DesiredProvider:
    segment_id = state.segment.id
    inventories = (
        {"IPV4_ADDRESS": _inventory(state.ipv4_total, state.ipv4_used)} if state.ipv4_total else {}
    )
    return DesiredProvider(
        uuid=segment_id,
        name=f"segment:{segment_id}",
        parent_uuid=None,
        host=None,
        inventories=inventories,
        traits=frozenset({SEGMENT_TRAIT}),
        aggregates=frozenset({segment_id}),
    )


@dataclass(frozen=True)
class Desired:
    providers: list[DesiredProvider]
    # Host -> the segment aggregates its compute node must be in (every host with an agent).
    host_aggregates: dict[str, frozenset[str]]
    segment_ids: frozenset[str]


def desired(agents: Iterable[Agent], segments: Sequence[SegmentState]) -> Desired:
    agents = list(agents)
    routed = [s for s in segments if s.routed]
    providers = [p for agent in agents for p in agent_providers(agent)]
    providers += [segment_provider(s) for s in routed]
    host_aggregates: dict[str, set[str]] = {agent.host: set() for agent in agents}
    for agent in agents:
        host_aggregates[agent.host] |= {s.segment.id for s in routed if agent.reaches(s.segment)}
    return Desired(
        providers=providers,
        host_aggregates={h: frozenset(a) for h, a in host_aggregates.items()},
        segment_ids=frozenset(s.segment.id for s in routed),
    )

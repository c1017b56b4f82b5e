"""The network service's domain objects, as frozen values the pure layers (IPAM, resource
requests, binding decisions) take and return; the store and the API translate rows and JSON to and
from these. Nothing here knows about HTTP or SQL.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

NetworkType = Literal["flat", "vlan", "vxlan", "geneve"]
OVERLAY_TYPES: Final = ("vxlan", "geneve")

AgentType = Literal["Open vSwitch agent", "NIC Switch agent"]
OVS_AGENT: Final = "Open vSwitch agent"
SRIOV_AGENT: Final = "NIC Switch agent"
# The program names real agents of each kind report.
AGENT_BINARIES: Final[Mapping[str, str]] = {
    OVS_AGENT: "neutron-openvswitch-agent",
    SRIOV_AGENT: "neutron-sriov-nic-agent",
}
# The VNIC types each kind of agent binds when its configuration does not narrow them.
DEFAULT_VNIC_TYPES: Final[Mapping[str, tuple[str, ...]]] = {
    OVS_AGENT: ("normal",),
    SRIOV_AGENT: ("direct", "macvtap", "direct-physical"),
}

IpAllocation = Literal["immediate", "deferred", "none"]


@dataclass(frozen=True, slots=True)
class Segment:
    id: str
    network_id: str
    network_type: NetworkType
    physical_network: str | None = None
    segmentation_id: int | None = None


@dataclass(frozen=True, slots=True)
class Subnet:
    id: str
    network_id: str
    ip_version: Literal[4, 6]
    cidr: str
    gateway_ip: str | None
    # Inclusive (first, last) address ranges, in address order, never overlapping.
    allocation_pools: tuple[tuple[str, str], ...]
    segment_id: str | None = None
    # IPv6 in SLAAC or DHCPv6-stateless mode: hosts make their addresses from their MACs.
    auto_address: bool = False


# -- QoS rules ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MinimumBandwidthRule:
    direction: Literal["egress", "ingress"]
    min_kbps: int


@dataclass(frozen=True, slots=True)
class MinimumPacketRateRule:
    direction: Literal["any", "egress", "ingress"]
    min_kpps: int


@dataclass(frozen=True, slots=True)
class BandwidthLimitRule:
    """Enforced by the agent's data path; it asks nothing of Placement."""

    direction: Literal["egress", "ingress"]
    max_kbps: int
    max_burst_kbps: int = 0


QosRule = MinimumBandwidthRule | MinimumPacketRateRule | BandwidthLimitRule


def qos_rule(
    rule_type: str,
    direction: str,
    min_kbps: int | None = None,
    min_kpps: int | None = None,
    max_kbps: int | None = None,
    max_burst_kbps: int | None = None,
) -> QosRule:
    """The rule a stored row (or ``qos.QosRule``, field for field) describes."""
    if rule_type == "minimum_bandwidth":
        return MinimumBandwidthRule(direction, min_kbps or 0)  # type: ignore[arg-type]
    if rule_type == "minimum_packet_rate":
        return MinimumPacketRateRule(direction, min_kpps or 0)  # type: ignore[arg-type]
    if rule_type == "bandwidth_limit":
        return BandwidthLimitRule(direction, max_kbps or 0, max_burst_kbps or 0)  # type: ignore[arg-type]
    raise ValueError(f"unknown QoS rule type {rule_type!r}")


# -- agents -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceBandwidth:
    """What one bridge (OVS) or physical function (SR-IOV) can guarantee, in kbps."""

    egress_kbps: int = 0
    ingress_kbps: int = 0


@dataclass(frozen=True, slots=True)
class PacketRate:
    """An OVS agent's packet processing capacity in kpps: either one figure for both directions
    (``any_kpps``) or one per direction, as the agent's configuration says."""

    any_kpps: int = 0
    egress_kpps: int = 0
    ingress_kpps: int = 0


@dataclass(frozen=True, slots=True)
class AgentConfiguration:
    # OVS: physical network -> bridge.
    bridge_mappings: Mapping[str, str] = field(default_factory=dict)
    # SR-IOV: physical network -> physical functions.
    device_mappings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # OVS: the overlay types it terminates ("vxlan", "geneve").
    tunnel_types: tuple[str, ...] = ()
    bandwidths: Mapping[str, DeviceBandwidth] = field(default_factory=dict)
    packet_rate: PacketRate | None = None
    # None: the agent type's default (``DEFAULT_VNIC_TYPES``).
    supported_vnic_types: tuple[str, ...] | None = None

    @classmethod
    def from_reported(cls, configurations: Mapping[str, Any]) -> AgentConfiguration:
        """Read the ``configurations`` object an agent reports (the keys the Networking API's
        agent resource shows)."""
        bandwidths = {
            device: DeviceBandwidth(int(bw.get("egress") or 0), int(bw.get("ingress") or 0))
            for device, bw in (configurations.get("resource_provider_bandwidths") or {}).items()
        }
        both = configurations.get("resource_provider_packet_processing_without_direction")
        directed = configurations.get("resource_provider_packet_processing_with_direction") or {}
        rate = None
        if both or directed:
            rate = PacketRate(
                any_kpps=int(both or 0),
                egress_kpps=int(directed.get("egress") or 0),
                ingress_kpps=int(directed.get("ingress") or 0),
            )
        vnic_types = configurations.get("supported_vnic_types")
        return cls(
            bridge_mappings=dict(configurations.get("bridge_mappings") or {}),
            device_mappings={
                physnet: tuple(devices)
                for physnet, devices in (configurations.get("device_mappings") or {}).items()
            },
            tunnel_types=tuple(configurations.get("tunnel_types") or ()),
            bandwidths=bandwidths,
            packet_rate=rate,
            supported_vnic_types=tuple(vnic_types) if vnic_types else None,
        )


def is_alive(heartbeat_at: dt.datetime, now: dt.datetime, down_time: int) -> bool:
    """Whether an agent last heard from at ``heartbeat_at`` still counts as alive at ``now``."""
    return now - heartbeat_at <= dt.timedelta(seconds=down_time)


@dataclass(frozen=True, slots=True)
class Agent:
    host: str
    agent_type: AgentType
    alive: bool = True
    admin_state_up: bool = True
    configuration: AgentConfiguration = field(default_factory=AgentConfiguration)

    @property
    def vnic_types(self) -> tuple[str, ...]:
        given = self.configuration.supported_vnic_types
        return given if given is not None else DEFAULT_VNIC_TYPES.get(self.agent_type, ())

    def reaches(self, segment: Segment) -> bool:
        """Whether the agent's host can carry the segment's traffic: a flat or VLAN segment on a
        physical network it maps (bridges for OVS, physical functions for SR-IOV), or for OVS an
        overlay segment of a tunnel type it terminates (one it does not cannot be carried)."""
        config = self.configuration
        if segment.network_type in OVERLAY_TYPES:
            return self.agent_type == OVS_AGENT and segment.network_type in config.tunnel_types
        mappings = (
            config.bridge_mappings if self.agent_type == OVS_AGENT else config.device_mappings
        )
        return segment.physical_network is not None and segment.physical_network in mappings


# -- Placement's view of a host, and what a port asks of it ------------------------------------------


@dataclass(frozen=True, slots=True)
class HostProvider:
    """One resource provider of the network's making in a host's Placement tree."""

    uuid: str
    agent_type: str
    # The bridge or physical function it stands for; None for the agent's own provider.
    device: str | None
    traits: frozenset[str]
    # The resource classes it has inventory of.
    resource_classes: frozenset[str]


@dataclass(frozen=True, slots=True)
class RequestGroup:
    id: str
    required: tuple[str, ...]
    resources: Mapping[str, int]

    @property
    def is_bandwidth(self) -> bool:
        """Bandwidth groups are served by a device provider, packet-rate ones by the agent's."""
        return any(rc.startswith("NET_BW_") for rc in self.resources)


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    """A port's ``resource_request`` (the "port-resource-request-groups" format)."""

    request_groups: tuple[RequestGroup, ...]
    same_subtree: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        """``{"request_groups": [{"id", "required", "resources"}...], "same_subtree": [ids]}``"""
        return {
            "request_groups": [
                {"id": g.id, "required": list(g.required), "resources": dict(g.resources)}
                for g in self.request_groups
            ],
            "same_subtree": list(self.same_subtree),
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> ResourceRequest:
        return cls(
            request_groups=tuple(
                RequestGroup(
                    id=str(g["id"]),
                    required=tuple(g.get("required") or ()),
                    resources={str(rc): int(n) for rc, n in (g.get("resources") or {}).items()},
                )
                for g in document.get("request_groups") or ()
            ),
            same_subtree=tuple(document.get("same_subtree") or ()),
        )


@dataclass(frozen=True, slots=True)
class FixedIp:
    subnet_id: str
    ip_address: str


@dataclass(frozen=True, slots=True)
class Port:
    """What a binding decision needs of a port."""

    id: str
    network_id: str
    vnic_type: str = "normal"
    resource_request: ResourceRequest | None = None
    binding_profile: Mapping[str, Any] = field(default_factory=dict)
    ip_allocation: IpAllocation = "immediate"
    fixed_ips: tuple[FixedIp, ...] = ()

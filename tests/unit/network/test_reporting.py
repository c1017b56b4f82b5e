"""What Placement must show for agents and segments (``berth.network.reporting``), as data."""

from __future__ import annotations

from typing import Any

from berth.network.model import OVS_AGENT as OVS
from berth.network.model import SRIOV_AGENT as SRIOV
from berth.network.model import Agent, AgentConfiguration, Segment
from berth.network.reporting import SegmentState, agent_providers, desired

OVS_CONFIG = {
    "bridge_mappings": {"public": "br-ex"},
    "resource_provider_bandwidths": {"br-ex": {"egress": 10_000_000, "ingress": 5_000_000}},
    "resource_provider_packet_processing_without_direction": 1000,
    "tunnel_types": ["vxlan"],
}
SRIOV_CONFIG = {
    "device_mappings": {"physnet1": ["ens1f0"], "physnet2": ["ens1f1"]},
    "resource_provider_bandwidths": {
        "ens1f0": {"egress": 25_000_000, "ingress": 25_000_000},
        "ens1f1": {"egress": 25_000_000},
    },
}


def AgentState(kind: str, host: str, config: dict[str, Any]) -> Agent:
    return Agent(host, kind, configuration=AgentConfiguration.from_reported(config))  # type: ignore[arg-type]


def _segment(sid: str, kind: str, physnet: str | None, routed: bool, **ips: int) -> SegmentState:
    return SegmentState(Segment(sid, "n", kind, physnet), routed, **ips)  # type: ignore[arg-type]


def test_an_ovs_agent_gets_a_packet_rate_provider_and_one_per_bridge() -> None:
    top, bridge = agent_providers(AgentState(OVS, "cn1", OVS_CONFIG))
    assert (top.name, top.host, top.parent_uuid) == ("cn1:Open vSwitch agent", "cn1", None)
    assert top.inventories["NET_PACKET_RATE_KILOPACKET_PER_SEC"]["total"] == 1000
    assert top.traits == {"CUSTOM_VNIC_TYPE_NORMAL"}
    assert (bridge.name, bridge.parent_uuid) == ("cn1:Open vSwitch agent:br-ex", top.uuid)
    assert bridge.inventories["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 10_000_000
    assert bridge.inventories["NET_BW_IGR_KILOBIT_PER_SEC"]["max_unit"] == 5_000_000
    assert bridge.traits == {"CUSTOM_VNIC_TYPE_NORMAL", "CUSTOM_PHYSNET_PUBLIC"}


def test_an_sriov_agent_gets_one_provider_per_physical_function() -> None:
    top, pf0, pf1 = agent_providers(AgentState(SRIOV, "cn1", SRIOV_CONFIG))
    assert top.inventories == {}
    assert "CUSTOM_VNIC_TYPE_DIRECT" in top.traits
    assert "CUSTOM_PHYSNET_PHYSNET1" in pf0.traits and "CUSTOM_PHYSNET_PHYSNET2" not in pf0.traits
    assert set(pf1.inventories) == {"NET_BW_EGR_KILOBIT_PER_SEC"}


def test_provider_uuids_are_stable_and_per_host() -> None:
    one = agent_providers(AgentState(OVS, "cn1", OVS_CONFIG))
    again = agent_providers(AgentState(OVS, "cn1", OVS_CONFIG))
    other = agent_providers(AgentState(OVS, "cn2", OVS_CONFIG))
    assert [p.uuid for p in one] == [p.uuid for p in again]
    assert not {p.uuid for p in one} & {p.uuid for p in other}


def test_routed_segments_become_providers_with_free_addresses_and_host_aggregates() -> None:
    agents = [AgentState(OVS, "cn1", OVS_CONFIG), AgentState(SRIOV, "cn2", SRIOV_CONFIG)]
    segments = [
        _segment("s1", "vlan", "public", True, ipv4_total=253, ipv4_used=3),
        _segment("s2", "flat", "physnet1", True),
        _segment("s3", "vlan", "public", False, ipv4_total=10),
    ]
    found = desired(agents, segments)
    by_uuid = {p.uuid: p for p in found.providers}
    assert by_uuid["s1"].inventories["IPV4_ADDRESS"]["total"] == 253
    assert by_uuid["s1"].inventories["IPV4_ADDRESS"]["reserved"] == 3
    assert by_uuid["s1"].aggregates == {"s1"}
    assert by_uuid["s2"].inventories == {}
    assert "s3" not in by_uuid
    assert found.host_aggregates == {"cn1": {"s1"}, "cn2": {"s2"}}
    assert found.segment_ids == {"s1", "s2"}

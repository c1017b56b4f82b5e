"""Binding decisions: every refusal code, and what a successful plan says.

The host used throughout:

    compute-1
    ├── Open vSwitch agent        NET_PACKET_RATE_KILOPACKET_PER_SEC; VNIC normal
    │   ├── br-ex                 NET_BW_*; physnet0, VNIC normal
    │   └── br-one                NET_BW_*; physnet1, VNIC normal
    └── NIC Switch agent          VNIC direct, macvtap, direct-physical
        └── ens1f0                NET_BW_*; physnet2, SR-IOV VNIC types

OVS terminates vxlan (not geneve).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from berth.network import exceptions
from berth.network import resource_request as rr
from berth.network.binding import (
    BindingPlan,
    BindingRefused,
    Reason,
    plan_binding,
    reachable_segments,
)
from berth.network.model import (
    Agent,
    AgentConfiguration,
    FixedIp,
    HostProvider,
    MinimumBandwidthRule,
    MinimumPacketRateRule,
    Port,
    ResourceRequest,
    Segment,
    Subnet,
)

HOST = "compute-1"
NET = "net-1"
BW_CLASSES = frozenset({"NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"})
NORMAL = "CUSTOM_VNIC_TYPE_NORMAL"
SRIOV_VNICS = frozenset(
    {"CUSTOM_VNIC_TYPE_DIRECT", "CUSTOM_VNIC_TYPE_MACVTAP", "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"}
)

OVS = Agent(
    HOST,
    "Open vSwitch agent",
    configuration=AgentConfiguration.from_reported(
        {
            "bridge_mappings": {"physnet0": "br-ex", "physnet1": "br-one"},
            "tunnel_types": ["vxlan"],
            "resource_provider_bandwidths": {"br-ex": {"egress": 10**7, "ingress": 10**7}},
            "resource_provider_packet_processing_without_direction": 10**6,
        }
    ),
)
SRIOV = Agent(
    HOST,
    "NIC Switch agent",
    configuration=AgentConfiguration.from_reported({"device_mappings": {"physnet2": ["ens1f0"]}}),
)
ELSEWHERE = dataclasses.replace(OVS, host="compute-2")

RP_OVS = HostProvider(
    "rp-ovs",
    "Open vSwitch agent",
    None,
    frozenset({NORMAL}),
    frozenset({"NET_PACKET_RATE_KILOPACKET_PER_SEC"}),
)
RP_BR_EX = HostProvider(
    "rp-br-ex",
    "Open vSwitch agent",
    "br-ex",
    frozenset({NORMAL, "CUSTOM_PHYSNET_PHYSNET0"}),
    BW_CLASSES,
)
RP_BR_ONE = HostProvider(
    "rp-br-one",
    "Open vSwitch agent",
    "br-one",
    frozenset({NORMAL, "CUSTOM_PHYSNET_PHYSNET1"}),
    BW_CLASSES,
)
RP_SRIOV = HostProvider("rp-sriov", "NIC Switch agent", None, SRIOV_VNICS, frozenset())
RP_ENS = HostProvider(
    "rp-ens", "NIC Switch agent", "ens1f0", SRIOV_VNICS | {"CUSTOM_PHYSNET_PHYSNET2"}, BW_CLASSES
)
PROVIDERS = {p.uuid: p for p in (RP_OVS, RP_BR_EX, RP_BR_ONE, RP_SRIOV, RP_ENS)}

VLAN0 = Segment("seg-vlan0", NET, "vlan", "physnet0", 100)
VLAN1 = Segment("seg-vlan1", NET, "vlan", "physnet1", 101)
FLAT2 = Segment("seg-flat2", NET, "flat", "physnet2")
VLAN9 = Segment("seg-vlan9", NET, "vlan", "physnet9", 109)  # reached by nobody here
VXLAN = Segment("seg-vxlan", NET, "vxlan", None, 5000)
GENEVE = Segment("seg-geneve", NET, "geneve", None, 6000)


def subnet(sid: str, segment: Segment | None, version: int = 4) -> Subnet:
    cidr = "10.0.0.0/24" if version == 4 else "2001:db8::/64"
    return Subnet(sid, NET, version, cidr, None, (), segment.id if segment else None)  # type: ignore[arg-type]


def bind(
    port: Port,
    segments: Sequence[Segment],
    agents: Sequence[Agent] = (OVS, SRIOV),
    **kwargs: Any,
) -> BindingPlan | BindingRefused:
    kwargs.setdefault("providers", PROVIDERS)
    return plan_binding(port, segments, HOST, agents, **kwargs)


def refused(result: BindingPlan | BindingRefused, reason: Reason) -> BindingRefused:
    assert isinstance(result, BindingRefused), result
    assert result.reason is reason
    assert HOST in result.message
    return result


def planned(result: BindingPlan | BindingRefused) -> BindingPlan:
    assert isinstance(result, BindingPlan), result
    return result


def qos_port(
    *rules: Any,
    vnic: str = "normal",
    physnets: Sequence[str | None] = ("physnet0",),
    allocation: Any = None,
) -> Port:
    request = rr.resource_request("port-q", vnic, rules, physnets)
    profile = {} if allocation is None else {"allocation": allocation}
    return Port("port-q", NET, vnic, request, profile)


BW_ID = rr.group_id("port-q", "bandwidth")
PPS_ID = rr.group_id("port-q", "packet-rate")
EGRESS = MinimumBandwidthRule("egress", 1000)
PPS = MinimumPacketRateRule("any", 100)


# -- success ----------------------------------------------------------------------------------------


def test_a_normal_port_binds_to_ovs_on_the_first_reachable_segment() -> None:
    plan = planned(bind(Port("p", NET), [VLAN9, VLAN0, VLAN1]))
    assert plan.agent_type == "Open vSwitch agent"
    assert plan.segment == VLAN0
    assert plan.vif_type == "ovs"
    assert plan.vif_details["port_filter"] is True
    assert plan.device == "br-ex"
    assert plan.allocate_ip_on == ()
    assert plan.host == HOST and plan.vnic_type == "normal"


def test_an_overlay_segment_binds_through_a_tunnel() -> None:
    plan = planned(bind(Port("p", NET), [GENEVE, VXLAN]))
    assert plan.segment == VXLAN
    assert plan.device is None


@pytest.mark.parametrize(
    ("vnic", "vif_type"),
    [("direct", "hw_veb"), ("macvtap", "hw_veb"), ("direct-physical", "hostdev_physical")],
)
def test_sriov_ports_bind_to_the_nic_switch_agent(vnic: str, vif_type: str) -> None:
    vlan2 = Segment("seg-vlan2", NET, "vlan", "physnet2", 42)
    plan = planned(bind(Port("p", NET, vnic), [VLAN0, vlan2]))
    assert plan.agent_type == "NIC Switch agent"
    assert plan.segment == vlan2
    assert plan.vif_type == vif_type
    assert plan.vif_details["vlan"] == "42"
    assert planned(bind(Port("p", NET, vnic), [FLAT2])).vif_details["vlan"] == "0"


def test_agents_of_other_hosts_do_not_count() -> None:
    refused(bind(Port("p", NET), [VLAN0], agents=[ELSEWHERE, SRIOV]), Reason.VNIC_TYPE_UNSUPPORTED)


def test_given_reachability_overrides_the_mappings() -> None:
    plan = planned(
        bind(
            Port("p", NET), [VLAN0, VLAN9], reachable={"Open vSwitch agent": frozenset({VLAN9.id})}
        )
    )
    assert plan.segment == VLAN9
    refused(bind(Port("p", NET), [VLAN0], reachable={}), Reason.SEGMENT_UNREACHABLE)


def test_reachable_segments_follow_the_mappings() -> None:
    everything = [VLAN0, VLAN1, FLAT2, VLAN9, VXLAN, GENEVE]
    assert reachable_segments(OVS, everything) == {VLAN0.id, VLAN1.id, VXLAN.id}
    assert reachable_segments(SRIOV, everything) == {FLAT2.id}


# -- refusals before the network is looked at ----------------------------------------------------


def test_no_agent() -> None:
    result = refused(bind(Port("p", NET), [VLAN0], agents=[ELSEWHERE]), Reason.NO_AGENT)
    assert result.message.startswith("Port p cannot be bound on host compute-1")


def test_vnic_type_unsupported() -> None:
    refused(bind(Port("p", NET, "direct"), [FLAT2], agents=[OVS]), Reason.VNIC_TYPE_UNSUPPORTED)
    refused(bind(Port("p", NET, "baremetal"), [VLAN0]), Reason.VNIC_TYPE_UNSUPPORTED)


def test_supported_vnic_types_can_be_narrowed_by_configuration() -> None:
    narrow = dataclasses.replace(
        SRIOV,
        configuration=AgentConfiguration.from_reported(
            {"device_mappings": {"physnet2": ["ens1f0"]}, "supported_vnic_types": ["direct"]}
        ),
    )
    refused(
        bind(Port("p", NET, "macvtap"), [FLAT2], agents=[OVS, narrow]), Reason.VNIC_TYPE_UNSUPPORTED
    )
    planned(bind(Port("p", NET, "direct"), [FLAT2], agents=[OVS, narrow]))


def test_agent_dead() -> None:
    dead = dataclasses.replace(OVS, alive=False)
    refused(bind(Port("p", NET), [VLAN0], agents=[dead, SRIOV]), Reason.AGENT_DEAD)


def test_agent_disabled() -> None:
    down = dataclasses.replace(OVS, admin_state_up=False)
    refused(bind(Port("p", NET), [VLAN0], agents=[down, SRIOV]), Reason.AGENT_DISABLED)
    both = dataclasses.replace(OVS, admin_state_up=False, alive=False)
    refused(bind(Port("p", NET), [VLAN0], agents=[both]), Reason.AGENT_DEAD)


# -- segments --------------------------------------------------------------------------------------


def test_segment_unreachable() -> None:
    refused(bind(Port("p", NET), [VLAN9, GENEVE]), Reason.SEGMENT_UNREACHABLE)
    refused(bind(Port("p", NET, "direct"), [VLAN0]), Reason.SEGMENT_UNREACHABLE)
    no_tunnels = dataclasses.replace(
        OVS, configuration=AgentConfiguration(bridge_mappings={"physnet0": "br-ex"})
    )
    refused(bind(Port("p", NET), [VXLAN], agents=[no_tunnels]), Reason.SEGMENT_UNREACHABLE)


def test_an_address_already_on_a_segment_pins_the_port_to_it() -> None:
    subnets = [subnet("sn-9", VLAN9), subnet("sn-0", VLAN0)]
    pinned = Port("p", NET, fixed_ips=(FixedIp("sn-9", "10.0.0.5"),))
    refused(bind(pinned, [VLAN0, VLAN9], subnets=subnets), Reason.SEGMENT_UNREACHABLE)
    on_one = Port("p", NET, fixed_ips=(FixedIp("sn-0", "10.0.0.5"),))
    assert planned(bind(on_one, [VLAN1, VLAN0], subnets=subnets)).segment == VLAN0


def test_an_address_on_a_subnet_without_segment_pins_nothing() -> None:
    port = Port("p", NET, fixed_ips=(FixedIp("sn", "10.0.0.5"),))
    assert planned(bind(port, [VLAN0], subnets=[subnet("sn", None)])).segment == VLAN0


# -- deferred addresses ----------------------------------------------------------------------------

ROUTED = [VLAN9, VLAN0, VLAN1]
ROUTED_SUBNETS = [
    subnet("sn-9", VLAN9),
    subnet("sn-0", VLAN0),
    subnet("sn-1", VLAN1),
    subnet("sn-0-v6", VLAN0, 6),
]


def deferred(**kwargs: Any) -> Port:
    return Port("p", NET, ip_allocation="deferred", **kwargs)


def test_a_deferred_port_takes_an_address_on_the_segment_it_binds_to() -> None:
    free = {"sn-9": 100, "sn-0": 3, "sn-1": 3, "sn-0-v6": 2**64}
    plan = planned(bind(deferred(), ROUTED, subnets=ROUTED_SUBNETS, free_ips=free))
    assert plan.segment == VLAN0
    assert plan.allocate_ip_on == ("sn-0", "sn-0-v6")


def test_a_full_segment_gives_way_to_the_next_reachable_one() -> None:
    free = {"sn-9": 100, "sn-0": 0, "sn-1": 3, "sn-0-v6": 5}
    plan = planned(bind(deferred(), ROUTED, subnets=ROUTED_SUBNETS, free_ips=free))
    assert plan.segment == VLAN1
    assert plan.allocate_ip_on == ("sn-1",)


def test_the_first_subnet_with_room_is_chosen() -> None:
    subnets = [subnet("sn-a", VLAN0), subnet("sn-b", VLAN0)]
    plan = planned(bind(deferred(), [VLAN0], subnets=subnets, free_ips={"sn-a": 0, "sn-b": 1}))
    assert plan.allocate_ip_on == ("sn-b",)


@pytest.mark.parametrize(
    "free",
    [
        {"sn-9": 100, "sn-0": 0, "sn-1": 0, "sn-0-v6": 5},  # IPv4 gone everywhere reached
        {"sn-9": 100, "sn-1": 0, "sn-0": 5, "sn-0-v6": 0},  # segment 0 lacks IPv6, 1 lacks IPv4
        {},
    ],
)
def test_no_free_ip(free: dict[str, int]) -> None:
    refused(bind(deferred(), ROUTED, subnets=ROUTED_SUBNETS, free_ips=free), Reason.NO_FREE_IP)


def test_a_subnet_without_segment_serves_every_segment() -> None:
    subnets = [subnet("sn-9", VLAN9), subnet("sn-any", None)]
    plan = planned(bind(deferred(), [VLAN9, VLAN0], subnets=subnets, free_ips={"sn-any": 1}))
    assert (plan.segment, plan.allocate_ip_on) == (VLAN0, ("sn-any",))


def test_a_reached_segment_without_subnets_cannot_give_a_deferred_port_an_address() -> None:
    refused(
        bind(deferred(), [VLAN0], subnets=[subnet("sn-9", VLAN9)], free_ips={"sn-9": 9}),
        Reason.NO_FREE_IP,
    )


def test_ports_that_have_or_want_no_address_ignore_free_counts() -> None:
    have = deferred(fixed_ips=(FixedIp("sn-0", "10.0.0.9"),))
    assert planned(bind(have, ROUTED, subnets=ROUTED_SUBNETS, free_ips={})).allocate_ip_on == ()
    none = Port("p", NET, ip_allocation="none")
    assert planned(bind(none, ROUTED, subnets=ROUTED_SUBNETS, free_ips={})).segment == VLAN0


# -- allocations of ports with a resource request --------------------------------------------------


def test_a_bandwidth_allocation_picks_its_bridge_and_segment() -> None:
    port = qos_port(EGRESS, physnets=("physnet1", "physnet0"), allocation={BW_ID: "rp-br-ex"})
    assert port.resource_request is not None
    assert (
        port.resource_request.request_groups[0].required[0]
        == "in:CUSTOM_PHYSNET_PHYSNET0,CUSTOM_PHYSNET_PHYSNET1"
    )
    plan = planned(bind(port, [VLAN1, VLAN0]))
    assert plan.segment == VLAN0  # not the first segment: the bandwidth is on physnet0's bridge
    assert plan.device == "br-ex"


def test_bandwidth_and_packet_rate_under_one_agent() -> None:
    port = qos_port(EGRESS, PPS, allocation={BW_ID: "rp-br-ex", PPS_ID: "rp-ovs"})
    assert planned(bind(port, [VLAN0])).agent_type == "Open vSwitch agent"


def test_packet_rate_alone_binds_on_any_reachable_segment() -> None:
    port = qos_port(PPS, allocation={PPS_ID: "rp-ovs"})
    assert planned(bind(port, [VLAN9, VXLAN])).segment == VXLAN


def test_an_overlay_network_uses_bandwidth_with_no_physnet() -> None:
    port = qos_port(EGRESS, physnets=(None,), allocation={BW_ID: "rp-br-ex"})
    assert planned(bind(port, [VXLAN])).segment == VXLAN


def test_a_physnet_bandwidth_allocation_never_lands_on_an_overlay_segment() -> None:
    port = qos_port(EGRESS, physnets=("physnet1", None), allocation={BW_ID: "rp-br-one"})
    assert planned(bind(port, [VXLAN, VLAN1])).segment == VLAN1
    refused(
        bind(port, [VXLAN, VLAN1], reachable={"Open vSwitch agent": frozenset({VXLAN.id})}),
        Reason.SEGMENT_UNREACHABLE,
    )


def test_an_sriov_bandwidth_allocation() -> None:
    port = qos_port(EGRESS, vnic="direct", physnets=("physnet2",), allocation={BW_ID: "rp-ens"})
    plan = planned(bind(port, [FLAT2]))
    assert (plan.agent_type, plan.vif_type, plan.device) == ("NIC Switch agent", "hw_veb", "ens1f0")


@pytest.mark.parametrize("allocation", [None, "rp-br-ex", {}, {PPS_ID: "rp-ovs"}])
def test_allocation_missing(allocation: Any) -> None:
    port = qos_port(EGRESS, PPS, allocation=allocation)
    refused(bind(port, [VLAN0]), Reason.ALLOCATION_MISSING)


@pytest.mark.parametrize(
    ("rules", "allocation"),
    [
        ((EGRESS,), {BW_ID: "rp-of-another-host"}),
        ((EGRESS,), {BW_ID: "rp-ovs"}),  # an agent cannot hold bandwidth
        ((PPS,), {PPS_ID: "rp-br-ex"}),  # a bridge cannot hold packet rate
        ((EGRESS,), {BW_ID: "rp-br-one"}),  # physnet1's bridge for a physnet0 network
        ((EGRESS,), {BW_ID: "rp-br-ex", PPS_ID: "rp-ovs"}),  # a group the port does not have
        ((EGRESS, PPS), {BW_ID: "rp-br-ex", PPS_ID: "rp-sriov"}),  # not one subtree (and traits)
    ],
)
def test_allocation_wrong_provider(rules: tuple[Any, ...], allocation: dict[str, str]) -> None:
    refused(
        bind(qos_port(*rules, allocation=allocation), [VLAN0]), Reason.ALLOCATION_WRONG_PROVIDER
    )


def test_a_provider_without_the_inventory_is_the_wrong_provider() -> None:
    empty = dataclasses.replace(RP_BR_EX, resource_classes=frozenset())
    port = qos_port(EGRESS, allocation={BW_ID: "rp-br-ex"})
    result = refused(
        bind(port, [VLAN0], providers={**PROVIDERS, "rp-br-ex": empty}),
        Reason.ALLOCATION_WRONG_PROVIDER,
    )
    assert "NET_BW_EGR_KILOBIT_PER_SEC" in result.message


def test_providers_under_two_agents_are_the_wrong_providers() -> None:
    # Traits that would fit, so only the subtree check can refuse.
    odd_pps = dataclasses.replace(
        RP_SRIOV, traits=frozenset({NORMAL}), resource_classes=RP_OVS.resource_classes
    )
    port = qos_port(EGRESS, PPS, allocation={BW_ID: "rp-br-ex", PPS_ID: "rp-sriov"})
    result = refused(
        bind(port, [VLAN0], providers={**PROVIDERS, "rp-sriov": odd_pps}),
        Reason.ALLOCATION_WRONG_PROVIDER,
    )
    assert "one agent" in result.message


def test_the_agent_holding_the_allocation_must_be_up() -> None:
    port = qos_port(EGRESS, allocation={BW_ID: "rp-br-ex"})
    other_ovs_like = dataclasses.replace(
        SRIOV, configuration=AgentConfiguration(supported_vnic_types=("normal",))
    )
    dead = dataclasses.replace(OVS, alive=False)
    refused(bind(port, [VLAN0], agents=[dead, other_ovs_like]), Reason.AGENT_DEAD)
    down = dataclasses.replace(OVS, admin_state_up=False)
    refused(bind(port, [VLAN0], agents=[down, other_ovs_like]), Reason.AGENT_DISABLED)


def test_a_request_given_as_a_document_is_checked_the_same_way() -> None:
    document = {
        "request_groups": [
            {
                "id": "g1",
                "required": ["CUSTOM_PHYSNET_PHYSNET0", NORMAL],
                "resources": {"NET_BW_IGR_KILOBIT_PER_SEC": 5},
            }
        ],
        "same_subtree": ["g1"],
    }
    request = ResourceRequest.from_dict(document)
    assert (
        planned(
            bind(
                Port(
                    "p",
                    NET,
                    resource_request=request,
                    binding_profile={"allocation": {"g1": "rp-br-ex"}},
                ),
                [VLAN0],
            )
        ).device
        == "br-ex"
    )
    refused(
        bind(
            Port(
                "p",
                NET,
                resource_request=request,
                binding_profile={"allocation": {"g1": "rp-br-one"}},
            ),
            [VLAN0],
        ),
        Reason.ALLOCATION_WRONG_PROVIDER,
    )


# -- purity and the API's view -----------------------------------------------------------------------


def test_binding_never_mutates_its_inputs() -> None:
    port = qos_port(EGRESS, PPS, allocation={BW_ID: "rp-br-ex", PPS_ID: "rp-ovs"})
    subnets = list(ROUTED_SUBNETS)
    free = {"sn-0": 1}
    providers = dict(PROVIDERS)
    agents = [OVS, SRIOV]
    before = copy.deepcopy((port, subnets, free, providers, agents))
    first = bind(port, ROUTED, agents, subnets=subnets, free_ips=free, providers=providers)
    assert (port, subnets, free, providers, agents) == before
    assert bind(port, ROUTED, agents, subnets=subnets, free_ips=free, providers=providers) == first


def test_a_refusal_becomes_a_conflict_naming_the_host_and_code() -> None:
    error = refused(bind(Port("p", NET), [VLAN9]), Reason.SEGMENT_UNREACHABLE).as_error()
    assert isinstance(error, exceptions.PortBindingError)
    assert error.status == 409
    assert HOST in str(error) and "segment-unreachable" in str(error)


def test_reason_codes_are_stable() -> None:
    assert sorted(r.value for r in Reason) == sorted(
        [
            "no-agent",
            "vnic-type-unsupported",
            "agent-dead",
            "agent-disabled",
            "allocation-missing",
            "allocation-wrong-provider",
            "segment-unreachable",
            "no-free-ip",
        ]
    )


def test_agent_configuration_reads_what_agents_report() -> None:
    config = AgentConfiguration.from_reported(
        {
            "resource_provider_bandwidths": {"ens1f0": {"egress": 100, "ingress": 200}},
            "resource_provider_packet_processing_with_direction": {"egress": 7, "ingress": 8},
            "device_mappings": {"physnet2": ["ens1f0", "ens1f1"]},
        }
    )
    assert config.bandwidths["ens1f0"].egress_kbps == 100
    assert config.bandwidths["ens1f0"].ingress_kbps == 200
    assert config.packet_rate is not None and config.packet_rate.ingress_kpps == 8
    assert config.device_mappings == {"physnet2": ("ens1f0", "ens1f1")}
    assert config.supported_vnic_types is None

"""RequestSpec -> the GET /allocation_candidates query: exact query strings, each also parsed by
Berth's own Placement at the microversion the query names (and refused one version lower, when
the version was raised for a feature)."""

from __future__ import annotations

from typing import Any

import pytest

from berth.compute.objects.request_spec import Destination, Image, PortRequest
from berth.compute.scheduler.flavor_groups import flavor_resources
from berth.compute.scheduler.placement_query import (
    MappingError,
    PlacementQuery,
    QueryError,
    build_query,
    group_suffix,
    port_allocations,
)
from berth.network import resource_request as rr
from berth.network.model import MinimumBandwidthRule, MinimumPacketRateRule
from berth.placement.candidates import parse_candidates_request
from berth.placement.exceptions import InvalidInput
from tests.unit.compute.factories import flavor, port, spec

BASE = "resources=DISK_GB:20,MEMORY_MB:2048,VCPU:2"
TAIL = "root_required=!COMPUTE_STATUS_DISABLED&limit=1000"


def u(tag: str) -> str:
    """A readable uuid (Placement wants uuids for aggregates and providers)."""
    return f"00000000-0000-4000-8000-{tag.rjust(12, '0')}"


SEG_A, SEG_B, SEG_C = u("a"), u("b"), u("c")
AGG1, AGG2, AGG3, AGG_X, AGG_Y = u("1"), u("2"), u("3"), u("f1"), u("f2")
NODE = u("cc")


def wire(query: PlacementQuery) -> str:
    """The query as a readable string, checked by Placement's parser at its microversion."""
    parse_candidates_request(query.pairs(), query.version)
    return "&".join(f"{k}={v}" for k, v in query.pairs())


def refused_one_version_lower(query: PlacementQuery) -> bool:
    major, minor = query.version
    try:
        parse_candidates_request(query.pairs(), (major, minor - 1))
    except InvalidInput:
        return True
    return False


def network_port(port_id: str, vnic: str, *rules: Any, physnets: tuple[str, ...]) -> PortRequest:
    """A port whose resource request the network service itself computed."""
    found = rr.resource_request(port_id, vnic, rules, physnets)
    assert found is not None
    return PortRequest(port_id, found.as_dict(), vnic_type=vnic)


# -- the flavor ---------------------------------------------------------------------------------


def test_flavor_only() -> None:
    query = build_query(spec())
    assert wire(query) == f"{BASE}&{TAIL}"
    assert query.microversion == "1.35"
    assert str(query) == f"GET /allocation_candidates?{BASE}&{TAIL} (placement 1.35)"
    assert query.port_groups == {}


def test_limit_comes_from_the_caller_and_can_be_left_out() -> None:
    assert wire(build_query(spec(), limit=7)).endswith("&limit=7")
    assert "limit" not in wire(build_query(spec(), limit=None))


@pytest.mark.parametrize(
    ("fields", "bfv", "disk"),
    [
        ({"root_gb": 20, "ephemeral_gb": 5, "swap_mb": 1536}, False, 27),  # swap rounds up
        ({"root_gb": 20, "swap_mb": 1}, False, 21),
        ({"root_gb": 20, "swap_mb": 1024}, False, 21),
        ({"root_gb": 20, "ephemeral_gb": 5}, True, 5),  # the root disk is a volume
        ({"root_gb": 20}, True, None),  # nothing local left: no DISK_GB at all
    ],
)
def test_disk_is_root_plus_ephemeral_plus_swap_in_whole_gigabytes(
    fields: dict[str, int], bfv: bool, disk: int | None
) -> None:
    resources = flavor_resources(flavor(**fields), boot_from_volume=bfv)
    assert resources.get("DISK_GB") == disk
    assert resources["MEMORY_MB"] == 2048  # swap is never memory


def test_extra_specs_override_add_remove_and_forbid() -> None:
    extra = {
        "resources:MEMORY_MB": "4096",
        "resources:DISK_GB": "0",
        "resources:CUSTOM_LICENSE": "1",
        "trait:HW_CPU_X86_AVX2": "required",
        "trait:CUSTOM_SLOW": "forbidden",
        "hw:cpu_policy": "shared",  # not Placement's business
        "aggregate_instance_extra_specs:ssd": "true",
    }
    image = Image("img", {"trait:HW_CPU_X86_SSE42": "required", "hw_architecture": "x86_64"})
    query = build_query(spec(flavor=flavor(extra_specs=extra), image=image))
    assert wire(query) == (
        "resources=CUSTOM_LICENSE:1,MEMORY_MB:4096,VCPU:2"
        "&required=HW_CPU_X86_AVX2,HW_CPU_X86_SSE42,!CUSTOM_SLOW"
        f"&{TAIL}"
    )


def test_granular_flavor_groups() -> None:
    extra = {
        "resources1:SRIOV_NET_VF": "1",
        "trait1:CUSTOM_PHYSNET_A": "required",
        "resources2:SRIOV_NET_VF": "1",
        "trait2:CUSTOM_PHYSNET_A": "forbidden",
        "resources10:VGPU": "1",
        "resources_acc:CUSTOM_FPGA": "1",
        "resources3:VGPU": "0",  # an empty group is no group
    }
    query = build_query(spec(flavor=flavor(extra_specs=extra)))
    assert wire(query) == (
        f"{BASE}"
        "&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_A"
        "&resources2=SRIOV_NET_VF:1&required2=!CUSTOM_PHYSNET_A"
        "&resources10=VGPU:1"
        "&resources_acc=CUSTOM_FPGA:1"
        f"&group_policy=none&{TAIL}"
    )


def test_one_granular_group_needs_no_policy_and_the_flavors_policy_wins() -> None:
    one = build_query(spec(flavor=flavor(extra_specs={"resources1:VGPU": "1"})))
    assert "group_policy" not in wire(one)
    extra = {"resources1:VGPU": "1", "resources2:VGPU": "1", "group_policy": "isolate"}
    assert "&group_policy=isolate&" in wire(build_query(spec(flavor=flavor(extra_specs=extra))))


@pytest.mark.parametrize(
    ("extra", "image_props", "phrase"),
    [
        ({"resources:VCPU": "two"}, {}, "integer"),
        ({"resources:VCPU": "-1"}, {}, "negative"),
        ({"resources:vcpu": "1"}, {}, "resource class"),
        ({"trait:HW_X": "preferred"}, {}, "'required' or 'forbidden'"),
        ({"trait1:HW_X": "required"}, {}, "traits but no resources"),
        ({"resources!:VCPU": "1"}, {}, "suffix"),
        ({"group_policy": "spread"}, {}, "group_policy"),
        ({"trait:HW_X": "forbidden"}, {"trait:HW_X": "required"}, "both required and forbidden"),
        ({"trait:COMPUTE_STATUS_DISABLED": "required"}, {}, "COMPUTE_STATUS_DISABLED"),
        (
            {"resources:VCPU": "0", "resources:MEMORY_MB": "0", "resources:DISK_GB": "0"},
            {},
            "no resources",
        ),
    ],
)
def test_what_placement_could_never_answer_is_a_query_error(
    extra: dict[str, str], image_props: dict[str, str], phrase: str
) -> None:
    with pytest.raises(QueryError, match=phrase):
        build_query(spec(flavor=flavor(extra_specs=extra), image=Image("img", image_props)))


# -- ports --------------------------------------------------------------------------------------


def test_two_ports_with_bandwidth_on_different_physnets() -> None:
    a = network_port("port-a", "normal", MinimumBandwidthRule("egress", 1000), physnets=("net0",))
    b = network_port(
        "port-b",
        "direct",
        MinimumBandwidthRule("egress", 2000),
        MinimumBandwidthRule("ingress", 3000),
        physnets=("net1",),
    )
    ga = rr.group_id("port-a", rr.BANDWIDTH)
    gb = rr.group_id("port-b", rr.BANDWIDTH)
    query = build_query(spec(ports=(a, b)))
    assert wire(query) == (
        f"{BASE}"
        f"&resources{ga}=NET_BW_EGR_KILOBIT_PER_SEC:1000"
        f"&required{ga}=CUSTOM_PHYSNET_NET0,CUSTOM_VNIC_TYPE_NORMAL"
        f"&resources{gb}=NET_BW_EGR_KILOBIT_PER_SEC:2000,NET_BW_IGR_KILOBIT_PER_SEC:3000"
        f"&required{gb}=CUSTOM_PHYSNET_NET1,CUSTOM_VNIC_TYPE_DIRECT"
        f"&group_policy=none&{TAIL}"
    )
    # A port's lone group is in its own subtree: no same_subtree, no 1.36.
    assert query.microversion == "1.35"
    assert query.port_groups == {ga: ("port-a", ga), gb: ("port-b", gb)}


def test_bandwidth_and_packet_rate_of_one_port_share_a_subtree() -> None:
    p = network_port(
        "port-a",
        "normal",
        MinimumBandwidthRule("egress", 1000),
        MinimumPacketRateRule("any", 500),
        physnets=("net0",),
    )
    bw = rr.group_id("port-a", rr.BANDWIDTH)
    pps = rr.group_id("port-a", rr.PACKET_RATE)
    query = build_query(spec(ports=(p,)))
    assert wire(query) == (
        f"{BASE}"
        f"&resources{bw}=NET_BW_EGR_KILOBIT_PER_SEC:1000"
        f"&required{bw}=CUSTOM_PHYSNET_NET0,CUSTOM_VNIC_TYPE_NORMAL"
        f"&resources{pps}=NET_PACKET_RATE_KILOPACKET_PER_SEC:500"
        f"&required{pps}=CUSTOM_VNIC_TYPE_NORMAL"
        f"&same_subtree={bw},{pps}"
        f"&group_policy=none&{TAIL}"
    )
    assert query.microversion == "1.36"
    assert refused_one_version_lower(query)


def test_a_port_on_two_physnets_asks_for_either_with_any_of_traits() -> None:
    p = network_port(
        "port-a", "normal", MinimumBandwidthRule("egress", 10), physnets=("net1", "net0")
    )
    g = rr.group_id("port-a", rr.BANDWIDTH)
    query = build_query(spec(ports=(p,)))
    assert wire(query) == (
        f"{BASE}"
        f"&resources{g}=NET_BW_EGR_KILOBIT_PER_SEC:10"
        f"&required{g}=CUSTOM_VNIC_TYPE_NORMAL"
        f"&required{g}=in:CUSTOM_PHYSNET_NET0,CUSTOM_PHYSNET_NET1"
        f"&{TAIL}"
    )
    assert query.microversion == "1.39"
    assert refused_one_version_lower(query)


def test_routed_network_port_constrains_the_compute_node_not_a_port_group() -> None:
    routed = PortRequest("port-r", segment_aggregates=(SEG_B, SEG_A))
    one_segment = PortRequest("port-s", segment_aggregates=(SEG_C,))
    query = build_query(spec(ports=(routed, one_segment, PortRequest("plain"))))
    assert wire(query) == f"{BASE}&member_of=in:{SEG_A},{SEG_B}&member_of={SEG_C}&{TAIL}"
    assert query.microversion == "1.35"


def test_routed_port_with_bandwidth_keeps_the_segments_on_the_unnamed_group() -> None:
    found = rr.resource_request("port-r", "normal", [MinimumBandwidthRule("egress", 5)], ["n0"])
    assert found is not None
    p = PortRequest("port-r", found.as_dict(), segment_aggregates=(SEG_A,))
    g = rr.group_id("port-r", rr.BANDWIDTH)
    assert wire(build_query(spec(ports=(p,)))) == (
        f"{BASE}&member_of={SEG_A}"
        f"&resources{g}=NET_BW_EGR_KILOBIT_PER_SEC:5"
        f"&required{g}=CUSTOM_PHYSNET_N0,CUSTOM_VNIC_TYPE_NORMAL&{TAIL}"
    )


def test_availability_zone_and_requested_destination() -> None:
    zones = {"az1": [AGG2, AGG1], "az2": [AGG3]}
    assert wire(build_query(spec(availability_zone="az1"), az_aggregates=zones)) == (
        f"{BASE}&member_of=in:{AGG1},{AGG2}&{TAIL}"
    )
    assert wire(build_query(spec(availability_zone="az2"), az_aggregates=zones)) == (
        f"{BASE}&member_of={AGG3}&{TAIL}"
    )
    # The default zone has no aggregate: only the AvailabilityZoneFilter can enforce it.
    assert wire(build_query(spec(availability_zone="nova"), az_aggregates=zones)) == (
        f"{BASE}&{TAIL}"
    )
    wanted = Destination(host="h1", node_uuid=NODE, aggregates=((AGG_Y, AGG_X), (AGG3,)))
    same_zone_twice = spec(availability_zone="az2", destination=wanted)
    assert wire(build_query(same_zone_twice, az_aggregates=zones)) == (
        f"{BASE}&member_of={AGG3}&member_of=in:{AGG_X},{AGG_Y}&in_tree={NODE}&{TAIL}"
    )


def test_port_group_errors() -> None:
    twice = {"id": "g1", "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}}
    with pytest.raises(QueryError, match="clashes"):
        build_query(spec(ports=(port("a", twice), port("b", twice))))
    with pytest.raises(QueryError, match="clashes"):
        build_query(
            spec(
                ports=(port("a", {**twice, "id": "1"}),),
                flavor=flavor(extra_specs={"resources1:VGPU": "1"}),
            )
        )
    resourceless = PortRequest("a", {"request_groups": [{"id": "g", "required": ["T"]}]})
    with pytest.raises(QueryError, match="no resources"):
        build_query(spec(ports=(resourceless,)))
    unknown = PortRequest("a", {"request_groups": [twice], "same_subtree": ["g1", "nope"]})
    with pytest.raises(QueryError, match="nope"):
        build_query(spec(ports=(unknown,)))
    both = {"id": "g", "resources": {"X": 1}, "required": ["T", "!T"]}
    with pytest.raises(QueryError, match="requires and forbids"):
        build_query(spec(ports=(port("a", both),)))


def test_resourceless_port_group_in_a_subtree_needs_1_36() -> None:
    groups = [
        {"id": "bw", "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}, "required": []},
        {"id": "agent", "required": ["CUSTOM_AGENT"]},
    ]
    p = PortRequest("a", {"request_groups": groups, "same_subtree": ["bw", "agent"]})
    query = build_query(spec(ports=(p,)))
    wire(query)
    assert ("requiredagent", "CUSTOM_AGENT") in query.pairs()
    assert query.version == (1, 36)


# -- suffixes and mappings ----------------------------------------------------------------------


def test_group_suffix_is_the_id_when_placement_accepts_it() -> None:
    gid = rr.group_id("p", rr.BANDWIDTH)
    assert group_suffix(gid) == gid
    odd = group_suffix("port 1/bandwidth")
    assert odd == group_suffix("port 1/bandwidth")
    assert odd != group_suffix("port 2/bandwidth")
    assert 1 <= len(odd) <= 64 and odd.replace("_", "").replace("-", "").isalnum()
    long = group_suffix("x" * 65)
    assert len(long) <= 64 and long != "x" * 64


def test_port_allocations_map_each_group_to_its_provider() -> None:
    a = network_port(
        "port-a",
        "normal",
        MinimumBandwidthRule("egress", 1),
        MinimumPacketRateRule("any", 1),
        physnets=("n",),
    )
    b = PortRequest("port-b")  # no resource request: not in the answer
    bw, pps = rr.group_id("port-a", rr.BANDWIDTH), rr.group_id("port-a", rr.PACKET_RATE)
    mappings = {"": ["cn"], bw: ["pf0"], pps: ["agent"]}
    assert port_allocations((a, b), mappings) == {"port-a": {bw: "pf0", pps: "agent"}}
    with pytest.raises(MappingError, match="0 providers"):
        port_allocations((a,), {bw: ["pf0"]})


def test_odd_group_ids_round_trip_through_the_query() -> None:
    p = port("port-a", {"id": "port a:bw", "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}})
    query = build_query(spec(ports=(p,)))
    [suffix] = query.port_groups or {}
    assert query.port_groups == {suffix: ("port-a", "port a:bw")}
    wire(query)
    assert port_allocations((p,), {suffix: ["pf"]}) == {"port-a": {"port a:bw": "pf"}}

"""A port's resource request: its shape for each combination of QoS rules."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from berth.network import exceptions
from berth.network import resource_request as rr
from berth.network.model import (
    BandwidthLimitRule,
    MinimumBandwidthRule,
    MinimumPacketRateRule,
    QosRule,
    ResourceRequest,
    qos_rule,
)

PORT = "5d2f6a3e-98b1-4c8e-9d1a-0a6c2b7e4f10"
BW = rr.group_id(PORT, "bandwidth")
PPS = rr.group_id(PORT, "packet-rate")
EGRESS_1G = MinimumBandwidthRule("egress", 1_000_000)
INGRESS_2G = MinimumBandwidthRule("ingress", 2_000_000)


def request(
    *rules: QosRule, vnic: str = "normal", physnets: tuple[str | None, ...] = ("physnet0",)
) -> dict[str, Any] | None:
    found = rr.resource_request(PORT, vnic, rules, physnets)
    return None if found is None else found.as_dict()


def test_no_minimum_rule_means_no_resource_request() -> None:
    assert request() is None
    assert request(BandwidthLimitRule("egress", 10_000, 1_000)) is None
    assert request(MinimumBandwidthRule("egress", 0), MinimumPacketRateRule("any", 0)) is None


def test_egress_minimum_bandwidth() -> None:
    assert request(EGRESS_1G) == {
        "request_groups": [
            {
                "id": BW,
                "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
                "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1_000_000},
            }
        ],
        "same_subtree": [BW],
    }


def test_both_bandwidth_directions_share_one_group() -> None:
    found = request(INGRESS_2G, EGRESS_1G, BandwidthLimitRule("egress", 5, 0))
    assert found is not None
    [group] = found["request_groups"]
    assert group["resources"] == {
        "NET_BW_EGR_KILOBIT_PER_SEC": 1_000_000,
        "NET_BW_IGR_KILOBIT_PER_SEC": 2_000_000,
    }


def test_packet_rate_any_direction_asks_only_for_the_vnic_type() -> None:
    assert request(MinimumPacketRateRule("any", 1000)) == {
        "request_groups": [
            {
                "id": PPS,
                "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
                "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 1000},
            }
        ],
        "same_subtree": [PPS],
    }


def test_directed_packet_rates() -> None:
    found = request(MinimumPacketRateRule("egress", 10), MinimumPacketRateRule("ingress", 20))
    assert found is not None
    assert found["request_groups"] == [
        {
            "id": PPS,
            "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
            "resources": {
                "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": 10,
                "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": 20,
            },
        }
    ]


def test_bandwidth_and_packet_rate_are_two_groups_in_one_subtree() -> None:
    found = request(EGRESS_1G, MinimumPacketRateRule("any", 1000))
    assert found is not None
    groups = found["request_groups"]
    assert [g["id"] for g in groups] == [BW, PPS]
    assert groups[0]["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1_000_000}
    assert groups[1]["required"] == ["CUSTOM_VNIC_TYPE_NORMAL"]
    assert found["same_subtree"] == [BW, PPS]


def test_several_physical_networks_are_an_any_of_requirement() -> None:
    found = request(EGRESS_1G, physnets=("physnet-b", None, "physnet.a", "physnet-b"))
    assert found is not None
    assert found["request_groups"][0]["required"] == [
        "in:CUSTOM_PHYSNET_PHYSNET_A,CUSTOM_PHYSNET_PHYSNET_B",
        "CUSTOM_VNIC_TYPE_NORMAL",
    ]


def test_names_that_map_to_one_trait_are_one_physnet() -> None:
    assert rr.physnet_requirement(["data-net", "data_net", "DATA.NET"]) == "CUSTOM_PHYSNET_DATA_NET"


def test_an_overlay_network_names_no_physical_network() -> None:
    found = request(EGRESS_1G, physnets=(None, None))
    assert found is not None
    assert found["request_groups"][0]["required"] == ["CUSTOM_VNIC_TYPE_NORMAL"]


def test_the_vnic_type_trait() -> None:
    found = request(EGRESS_1G, MinimumPacketRateRule("any", 5), vnic="direct-physical")
    assert found is not None
    for group in found["request_groups"]:
        assert group["required"][-1] == "CUSTOM_VNIC_TYPE_DIRECT_PHYSICAL"


def test_group_ids_are_stable_uuids_per_port_and_kind() -> None:
    assert uuid.UUID(BW).version == 5
    assert rr.group_id(PORT, "bandwidth") == BW
    assert BW != PPS
    assert rr.group_id("another-port", "bandwidth") != BW
    first = rr.resource_request(PORT, "normal", [EGRESS_1G], ["physnet0"])
    again = rr.resource_request(PORT, "normal", [EGRESS_1G], ["physnet0"])
    assert first == again


def test_the_document_round_trips() -> None:
    found = rr.resource_request(PORT, "normal", [EGRESS_1G, MinimumPacketRateRule("any", 3)], ["p"])
    assert found is not None
    assert ResourceRequest.from_dict(found.as_dict()) == found


def test_rules_are_made_from_stored_fields() -> None:
    assert qos_rule("minimum_bandwidth", "ingress", min_kbps=5) == MinimumBandwidthRule(
        "ingress", 5
    )
    assert qos_rule("minimum_packet_rate", "any", min_kpps=7) == MinimumPacketRateRule("any", 7)
    assert qos_rule("bandwidth_limit", "egress", max_kbps=9, max_burst_kbps=None) == (
        BandwidthLimitRule("egress", 9, 0)
    )
    with pytest.raises(ValueError, match="dscp_marking"):
        qos_rule("dscp_marking", "egress")


# -- which rules are in effect --------------------------------------------------------------------


def test_the_ports_policy_wins_even_without_rules() -> None:
    assert rr.rules_in_effect([EGRESS_1G], [INGRESS_2G]) == (EGRESS_1G,)
    assert rr.rules_in_effect([], [INGRESS_2G]) == ()
    assert rr.rules_in_effect(None, [INGRESS_2G]) == (INGRESS_2G,)
    assert rr.rules_in_effect(None, None) == ()


@pytest.mark.parametrize(
    "rules",
    [
        [EGRESS_1G, MinimumBandwidthRule("egress", 5)],
        [MinimumPacketRateRule("any", 1), MinimumPacketRateRule("egress", 1)],
        [MinimumPacketRateRule("ingress", 1), MinimumPacketRateRule("ingress", 2)],
    ],
)
def test_rules_that_could_never_be_served_are_a_conflict(rules: list[QosRule]) -> None:
    with pytest.raises(exceptions.QosRuleConflict) as caught:
        rr.check_rules(rules)
    assert caught.value.status == 409
    with pytest.raises(exceptions.QosRuleConflict):
        rr.resource_request(PORT, "normal", rules, ["physnet0"])


def test_compatible_rules_pass() -> None:
    rr.check_rules([EGRESS_1G, INGRESS_2G, MinimumPacketRateRule("egress", 1)])


def test_requirements_are_matched_against_traits() -> None:
    traits = frozenset({"CUSTOM_PHYSNET_A", "CUSTOM_VNIC_TYPE_NORMAL"})
    assert rr.requirement_met("CUSTOM_PHYSNET_A", traits)
    assert not rr.requirement_met("CUSTOM_PHYSNET_B", traits)
    assert rr.requirement_met("in:CUSTOM_PHYSNET_B,CUSTOM_PHYSNET_A", traits)
    assert not rr.requirement_met("in:CUSTOM_PHYSNET_B,CUSTOM_PHYSNET_C", traits)
    assert rr.requirement_met("!CUSTOM_PHYSNET_B", traits)
    assert not rr.requirement_met("!CUSTOM_PHYSNET_A", traits)


def test_the_same_rules_and_segments_work_the_request_out_once() -> None:
    """A port's creation, answers and binding ask for its request from the same inputs: they
    get the one worked out first; changed rules or segments get their own."""
    first = rr.resource_request(PORT, "normal", [EGRESS_1G], ["physnet0"])
    assert rr.resource_request(PORT, "normal", (EGRESS_1G,), ("physnet0",)) is first
    other = rr.resource_request(PORT, "normal", [INGRESS_2G], ["physnet0"])
    assert other is not None and other.as_dict() != first.as_dict()  # type: ignore[union-attr]
    moved = rr.resource_request(PORT, "normal", [EGRESS_1G], ["physnet1"])
    assert moved is not None and moved.request_groups[0].required[0] == "CUSTOM_PHYSNET_PHYSNET1"

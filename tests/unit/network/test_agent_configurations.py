"""The checks of agents' reported configurations, and when an agent counts as alive."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from berth.network import agents, exceptions, model

OVS = {
    "bridge_mappings": {"physnet1": "br-ex", "physnet2": "br-data"},
    "resource_provider_bandwidths": {"br-ex": {"egress": 1000, "ingress": None}, "br-data": {}},
    "resource_provider_packet_processing_with_direction": {"egress": 10, "ingress": 20},
    "resource_provider_packet_processing_without_direction": None,
    "tunnel_types": ["vxlan", "geneve"],
    "supported_vnic_types": ["normal"],
    "integration_bridge": "br-int",  # not Placement's concern: kept as reported
}
SRIOV = {
    "device_mappings": {"physnet2": ["ens1f0", "ens1f1"], "physnet3": ["ens2f0"]},
    "resource_provider_bandwidths": {"ens1f0": {"egress": 25000000, "ingress": 25000000}},
    "num_virtual_functions": {"ens1f0": 8, "ens2f0": 0},
}


@pytest.mark.parametrize(
    ("agent_type", "config"),
    [(agents.OVS, OVS), (agents.SRIOV, SRIOV), (agents.OVS, {}), (agents.SRIOV, {})],
)
def test_good_configurations_are_kept_as_reported(agent_type: str, config: dict[str, Any]) -> None:
    assert agents.check_configurations(agent_type, config) == config


@pytest.mark.parametrize(
    ("agent_type", "config", "key"),
    [
        (agents.OVS, [], "configurations"),
        (agents.OVS, {"bridge_mappings": "physnet1:br-ex"}, "bridge_mappings"),
        (agents.OVS, {"bridge_mappings": {"physnet1": ""}}, "bridge_mappings.physnet1"),
        (agents.OVS, {"bridge_mappings": {"": "br-ex"}}, "bridge_mappings"),
        (agents.OVS, {"bridge_mappings": {"a": "br-ex", "b": "br-ex"}}, "bridge_mappings.b"),
        (agents.OVS, {"resource_provider_bandwidths": {"br-ex": {"egress": 1}}},
         "resource_provider_bandwidths.br-ex"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": {"up": 1}}},
         "resource_provider_bandwidths.br-ex.up"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": {"egress": -1}}},
         "resource_provider_bandwidths.br-ex.egress"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": {"egress": 1.5}}},
         "resource_provider_bandwidths.br-ex.egress"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": {"egress": True}}},
         "resource_provider_bandwidths.br-ex.egress"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": {"egress": 2**31}}},
         "resource_provider_bandwidths.br-ex.egress"),
        (agents.OVS, {**OVS, "resource_provider_bandwidths": {"br-ex": 100}},
         "resource_provider_bandwidths.br-ex"),
        (agents.OVS, {"resource_provider_packet_processing_without_direction": "fast"},
         "resource_provider_packet_processing_without_direction"),
        (agents.OVS, {"resource_provider_packet_processing_without_direction": 5,
                      "resource_provider_packet_processing_with_direction": {"egress": 5}},
         "resource_provider_packet_processing_with_direction"),
        (agents.OVS, {"tunnel_types": ["vxlan", 4]}, "tunnel_types"),
        (agents.OVS, {"supported_vnic_types": "normal"}, "supported_vnic_types"),
        (agents.SRIOV, {"device_mappings": {"physnet2": "ens1f0"}}, "device_mappings.physnet2"),
        (agents.SRIOV, {"device_mappings": {"a": ["ens1f0"], "b": ["ens1f0"]}},
         "device_mappings.b"),
        (agents.SRIOV, {**SRIOV, "num_virtual_functions": {"ens9": 1}},
         "num_virtual_functions.ens9"),
        (agents.SRIOV, {**SRIOV, "num_virtual_functions": {"ens1f0": "8"}},
         "num_virtual_functions.ens1f0"),
        (agents.SRIOV, {**SRIOV, "resource_provider_bandwidths": {"br-ex": {}}},
         "resource_provider_bandwidths.br-ex"),
        # An SR-IOV agent has no bridges: OVS keys do not make devices.
        (agents.SRIOV, {"bridge_mappings": {"physnet1": "br-ex"},
                        "resource_provider_bandwidths": {"br-ex": {}}},
         "resource_provider_bandwidths.br-ex"),
    ],
)  # fmt: skip
def test_bad_configurations_are_refused_naming_the_key(
    agent_type: str, config: Any, key: str
) -> None:
    with pytest.raises(exceptions.InvalidInput) as refused:
        agents.check_configurations(agent_type, config)
    assert f"Reason: {key} " in str(refused.value)


NOW = dt.datetime(2026, 11, 23, 12, 0, 0)


@pytest.mark.parametrize(
    ("age", "alive"), [(0, True), (74, True), (75, True), (76, False), (-10, True)]
)
def test_an_agent_is_alive_until_its_heartbeat_is_older_than_the_down_time(
    age: int, alive: bool
) -> None:
    assert model.is_alive(NOW - dt.timedelta(seconds=age), NOW, 75) is alive

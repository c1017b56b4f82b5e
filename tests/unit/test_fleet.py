"""Fleet descriptions for berth up: YAML keys, counts, defaults from the settings, errors."""

from __future__ import annotations

import pytest

from berth.compute.host import fleet


def test_counts_cells_agents_and_defaults() -> None:
    found = fleet.parse(
        {
            "cells": ["a", "b"],
            "hosts": [
                {"name": "cn", "count": 2, "cell": "b", "cpu_allocation_ratio": 8,
                 "sriov": {"pfs": {"ens1f0": {"physnet": "p1", "vfs": 4, "egress_kbps": 10}}}},
                {"name": "solo", "ovs": {"bridges": {"br": {"physnets": ["x"], "egress_kbps": 5}}},
                 "driver": {"fail": 0.5, "fail_next": 2, "spawn_seconds": 0.1}},
            ],
        },
        {"cpu_allocation_ratio": 2.0, "reserved_host_memory_mb": 0},
    )  # fmt: skip
    cn1, cn2, solo = found.hosts
    assert (cn1.name, cn2.name, cn1.cell, solo.cell) == ("cn1", "cn2", "b", "a")
    assert cn1.resources.cpu_allocation_ratio == 8.0 and solo.resources.cpu_allocation_ratio == 2.0
    assert solo.resources.reserved_host_memory_mb == 0
    assert cn1.resources.pci["ens1f0"]["vfs"] == 4
    assert cn1.agents["NIC Switch agent"]["device_mappings"] == {"p1": ["ens1f0"]}
    assert solo.agents["Open vSwitch agent"]["bridge_mappings"] == {"x": "br"}
    assert (solo.failures.probability, solo.failures.next_calls, solo.spawn_seconds) == (
        0.5,
        2,
        0.1,
    )


def test_of_size_spreads_hosts_over_cells() -> None:
    found = fleet.parse(fleet.of_size(5, 2))
    assert [(h.name, h.cell) for h in found.hosts] == [
        ("cell1-cn1", "cell1"), ("cell1-cn2", "cell1"), ("cell1-cn3", "cell1"),
        ("cell2-cn1", "cell2"), ("cell2-cn2", "cell2"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"hosts": [{"name": "a", "cell": "nowhere"}]}, "cell 'nowhere'"),
        ({"hosts": [{"name": "a"}, {"name": "a"}]}, "unique"),
        ({"hosts": [{"name": "a", "vcpus": "many"}]}, "host a"),
    ],
)
def test_bad_fleets_name_the_problem(document: dict[str, object], message: str) -> None:
    with pytest.raises(fleet.FleetError, match=message):
        fleet.parse(document)

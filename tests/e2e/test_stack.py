"""The all-in-one stack starts with its fleet: compute nodes and the network's providers in
Placement, hosts mapped to their cells, services up."""

from __future__ import annotations

import gc

from berth.common import startup_objects
from tests.e2e.conftest import StackFactory

FLEET = {
    "cells": ["cell1"],
    "hosts": [
        {"name": "cn", "count": 2, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
         "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}},
                 "packet_rate_kpps": 100}},
        {"name": "sriov1", "sriov": {"pfs": {"ens1f0": {"physnet": "physnet1", "vfs": 2, "egress_kbps": 25000}}}},
    ],
}  # fmt: skip


def test_the_stack_reports_its_fleet(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET)
    placement = {"openstack-api-version": "placement 1.39"}
    names = sorted(
        p["name"]
        for p in client.get("/placement/resource_providers", headers=placement).json()[
            "resource_providers"
        ]
    )
    assert names == [
        "cn1", "cn1:Open vSwitch agent", "cn1:Open vSwitch agent:br-ex",
        "cn2", "cn2:Open vSwitch agent", "cn2:Open vSwitch agent:br-ex",
        "sriov1", "sriov1:NIC Switch agent", "sriov1:NIC Switch agent:ens1f0",
    ]  # fmt: skip
    cn1 = stack.agents["cn1"].node_uuid
    inventory = client.get(
        f"/placement/resource_providers/{cn1}/inventories", headers=placement
    ).json()
    assert inventory["inventories"]["VCPU"]["total"] == 8
    agents = client.get("/networking/v2.0/agents").json()["agents"]
    assert sorted((a["host"], a["alive"]) for a in agents) == [
        ("cn1", True),
        ("cn2", True),
        ("sriov1", True),
    ]
    assert [v["id"] for v in client.get("/compute/").json()["versions"]] == ["v2.0", "v2.1"]


def test_what_the_start_made_is_frozen_out_of_garbage_collection_until_the_stop(
    start_stack: StackFactory,
) -> None:
    before = gc.get_threshold()
    stack, _ = start_stack(FLEET)
    assert gc.get_freeze_count() > 0
    # What the running stack makes is collected less often than the interpreter's default.
    assert gc.get_threshold() == startup_objects.RUNNING_THRESHOLDS != before
    stack.stop()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before

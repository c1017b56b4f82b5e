"""The scheduler's query answered by Berth's own Placement engine, and the answer scheduled:
a direct port with guaranteed bandwidth on a routed network lands on the one host that reaches
its segment, with a VF of the very PF that holds its bandwidth."""

from __future__ import annotations

import random
from typing import Any

import orjson

from berth.compute.scheduler import (
    PortRequest,
    Scheduler,
    Selection,
    build_query,
    read_answer,
)
from berth.network import resource_request as rr
from berth.network.model import MinimumBandwidthRule
from berth.placement.candidates import (
    Inventory,
    Provider,
    ProviderIndex,
    allocation_candidates,
    parse_candidates_request,
    render,
)
from tests.unit.compute.factories import flavor, host, recording, spec

SEG_A = "00000000-0000-4000-8000-00000000000a"
SEG_B = "00000000-0000-4000-8000-00000000000b"
BW = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")
CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB", *BW, "NET_PACKET_RATE_KILOPACKET_PER_SEC"]
TRAITS = [
    "COMPUTE_STATUS_DISABLED",
    "CUSTOM_PHYSNET_NET0",
    "CUSTOM_VNIC_TYPE_NORMAL",
    "CUSTOM_VNIC_TYPE_DIRECT",
]


def _tree(name: str, segment: str, *, disabled: bool = False) -> list[Provider]:
    root = f"rp-{name}"
    node = Provider(
        uuid=root,
        name=name,
        root_uuid=root,
        inventories={
            "VCPU": Inventory(16),
            "MEMORY_MB": Inventory(32768),
            "DISK_GB": Inventory(500),
        },
        traits=frozenset({"COMPUTE_STATUS_DISABLED"} if disabled else ()),
        aggregates=frozenset({segment}),
    )
    agent = Provider(
        uuid=f"{name}-sriov-agent",
        name=f"{name}:NIC Switch agent",
        parent_uuid=root,
        root_uuid=root,
        traits=frozenset({"CUSTOM_VNIC_TYPE_DIRECT"}),
    )
    pfs = [
        Provider(
            uuid=f"{name}-{dev}",
            name=f"{name}:NIC Switch agent:{dev}",
            parent_uuid=agent.uuid,
            root_uuid=root,
            inventories={rc: Inventory(10_000) for rc in BW},
            traits=frozenset({"CUSTOM_PHYSNET_NET0", "CUSTOM_VNIC_TYPE_DIRECT"}),
        )
        for dev in ("ens1", "ens2")
    ]
    return [node, agent, *pfs]


INDEX = ProviderIndex.build(
    [*_tree("h1", SEG_A), *_tree("h2", SEG_B), *_tree("h3", SEG_A, disabled=True)],
    CLASSES,
    TRAITS,
)


def _answer(pairs: list[tuple[str, str]], version: tuple[int, int]) -> dict[str, Any]:
    request = parse_candidates_request(pairs, version)
    found = allocation_candidates(INDEX, request, randomize=False, rng=random.Random(0))
    return orjson.loads(orjson.dumps(render(found, INDEX, version)))  # type: ignore[no-any-return]


def _port() -> PortRequest:
    found = rr.resource_request(
        "port-1", "direct", [MinimumBandwidthRule("egress", 1000)], ["net0"]
    )
    assert found is not None
    return PortRequest("port-1", found.as_dict(), segment_aggregates=(SEG_A,), vnic_type="direct")


def test_routed_direct_port_with_bandwidth() -> None:
    request = spec(ports=(_port(),))
    query = build_query(request)
    answer = read_answer(orjson.dumps(_answer(query.pairs(), query.version)), query.microversion)
    candidates = answer.candidates
    # Only h1: h2 does not reach the segment, h3 is disabled. One candidate per PF.
    assert sorted(c.root for c in candidates) == ["rp-h1", "rp-h1"]
    bw = rr.group_id("port-1", rr.BANDWIDTH)
    assert sorted(c.mappings[bw] for c in candidates) == [("h1-ens1",), ("h1-ens2",)]

    hosts = [
        host(
            name,
            free_vfs={"ens1": 0, "ens2": 4},
            pf_providers={f"{name}-ens1": "ens1", f"{name}-ens2": "ens2"},
            node_uuid=f"rp-{name}",
        )
        for name in ("h1", "h2", "h3")
    ]
    claimed: list[Selection] = []
    schedule = Scheduler().select_destinations(
        request,
        candidates,
        hosts,
        recording(claimed),
        provider_summaries=answer.summaries,
    )
    [[chosen]] = schedule.selections
    assert claimed == [chosen]
    assert chosen.host == "h1"
    # ens1 has no free VF: the bandwidth must be taken on ens2, where the VF will come from.
    assert chosen.port_allocations == {"port-1": {bw: "h1-ens2"}}
    assert set(chosen.allocations) == {"rp-h1", "h1-ens2"}
    assert schedule.diagnoses[0].reasons("PciPassthroughFilter") == {}


def test_the_segment_on_the_port_group_would_match_no_provider() -> None:
    """Why the segment aggregates go on the unnamed group: the bandwidth provider is not in the
    segment's aggregate, only the compute node is."""
    query = build_query(spec(ports=(_port(),)))
    bw = rr.group_id("port-1", rr.BANDWIDTH)
    moved = [(f"member_of{bw}", v) if k == "member_of" else (k, v) for k, v in query.pairs()]
    assert _answer(moved, query.version)["allocation_requests"] == []
    assert _answer(query.pairs(), query.version)["allocation_requests"] != []


def test_a_disabled_node_is_refused_even_when_children_hold_its_cpus() -> None:
    """Why COMPUTE_STATUS_DISABLED is forbidden on the root: forbidden traits of the unnamed
    group only count on the providers that serve it, here the NUMA nodes."""
    root = Provider(
        uuid="rp-numa-host",
        name="numa-host",
        root_uuid="rp-numa-host",
        traits=frozenset({"COMPUTE_STATUS_DISABLED"}),
    )
    numa = Provider(
        uuid="numa0",
        name="numa0",
        parent_uuid=root.uuid,
        root_uuid=root.uuid,
        inventories={"VCPU": Inventory(16), "MEMORY_MB": Inventory(32768)},
    )
    index = ProviderIndex.build([root, numa], CLASSES, TRAITS)

    def answer(pairs: list[tuple[str, str]]) -> list[Any]:
        request = parse_candidates_request(pairs, (1, 35))
        found = allocation_candidates(index, request, randomize=False, rng=random.Random(0))
        body = orjson.loads(orjson.dumps(render(found, index, (1, 35))))
        return body["allocation_requests"]  # type: ignore[no-any-return]

    ours = build_query(spec(flavor=flavor(root_gb=0))).pairs()
    assert answer(ours) == []
    in_the_group = [p for p in ours if p[0] != "root_required"]
    in_the_group.append(("required", "!COMPUTE_STATUS_DISABLED"))
    assert answer(in_the_group) != []

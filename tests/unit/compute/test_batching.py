"""Requests of one shape scheduled in one pass: what makes a shape, how a member sees the
leader's candidates, and that each member keeps its own answer."""

from __future__ import annotations

from typing import Any

from berth.compute.objects.request_spec import SchedulerHints
from berth.compute.scheduler import NoValidHost, Schedule, Scheduler, SchedulerConfig, Selection
from berth.compute.scheduler.batching import Shapes, as_seen_by, shape, suffixes
from berth.compute.scheduler.placement_query import build_query, group_suffix
from berth.compute.scheduler.selection import Member
from tests.unit.compute.factories import (
    candidate,
    flavor,
    host,
    port,
    recording,
    spec,
    summaries_of,
)

BANDWIDTH = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}


def server(name: str, **kw: Any) -> Any:
    """A one-instance spec with one QoS port; ids differ per server, as for real ones."""
    group = {"id": f"group-{name}", "required": ["CUSTOM_PHYSNET_PUBLIC"], "resources": BANDWIDTH}
    fields: dict[str, Any] = {
        "instance_uuids": (f"vm-{name}",),
        "ports": (port(f"port-{name}", group),),
    }
    fields.update(kw)
    return spec(**fields)


def test_requests_differing_only_in_their_ids_have_one_shape() -> None:
    one, two = server("1"), server("2")
    assert shape(one, build_query(one)) == shape(two, build_query(two)) is not None
    bigger = server("3", flavor=flavor(vcpus=4))
    assert shape(bigger, build_query(bigger)) != shape(one, build_query(one))
    other_project = server("4", project_id="q")
    assert shape(other_project, build_query(other_project)) != shape(one, build_query(one))
    # Hints, groups and several instances are scheduled on their own.
    hinted = server("5", hints=SchedulerHints(different_host=("vm-1",)))
    assert shape(hinted, build_query(hinted)) is None
    two_instances = server("6", instance_uuids=("vm-6a", "vm-6b"))
    assert shape(two_instances, build_query(two_instances)) is None


def test_a_member_sees_the_leaders_candidates_through_its_own_suffixes() -> None:
    leader, member = server("1"), server("2")
    renamed = suffixes(build_query(leader), build_query(member))
    mine, theirs = group_suffix("group-1"), group_suffix("group-2")
    assert renamed == {mine: theirs}
    cn1 = host("cn1")
    found = candidate(cn1, extra={"bw1": BANDWIDTH}, mappings={"": ("rp-cn1",), mine: ("bw1",)})
    seen = as_seen_by(found, renamed)
    assert seen.mappings == {"": ("rp-cn1",), theirs: ("bw1",)}
    assert seen.allocation_request["mappings"] == {"": ["rp-cn1"], theirs: ["bw1"]}
    assert found.allocation_request["mappings"] == {"": ["rp-cn1"], mine: ["bw1"]}
    assert seen.allocations == found.allocations and found.mappings[mine] == ("bw1",)


def test_members_are_placed_in_turn_and_each_fails_alone() -> None:
    # Room for two servers on cn1 and one on cn2: the third member finds nothing left, the
    # fourth's claim breaks; the others are placed all the same, on what earlier ones left.
    cn1 = host("cn1", free_ram_mb=4096)
    cn2 = host("cn2", free_ram_mb=2048)
    summaries = {
        "rp-cn1": {"resources": {"MEMORY_MB": {"capacity": 4096, "used": 0}}},
        "rp-cn2": {"resources": {"MEMORY_MB": {"capacity": 2048, "used": 0}}},
    }
    claimed: list[Selection] = []

    def broken(_: Selection) -> bool:
        raise RuntimeError("placement went away")

    members = [
        Member(spec(instance_uuids=("vm-1",)), recording(claimed)),
        Member(spec(instance_uuids=("vm-2",)), broken),
        Member(spec(instance_uuids=("vm-3",)), recording(claimed)),
        Member(spec(instance_uuids=("vm-4",)), recording(claimed)),
        Member(spec(instance_uuids=("vm-5",)), recording(claimed)),
    ]
    outcomes = Scheduler(SchedulerConfig(weighers=("RAMWeigher",))).select_each(
        members,
        [candidate(cn1), candidate(cn2)],
        [cn1, cn2],
        provider_summaries=summaries_of(summaries),
    )
    assert isinstance(outcomes[1], RuntimeError)
    placed = [o for o in outcomes if isinstance(o, Schedule)]
    assert [s.selections[0][0].instance_uuid for s in placed] == ["vm-1", "vm-3", "vm-4"]
    assert sorted(s.selections[0][0].host for s in placed) == ["cn1", "cn1", "cn2"]
    assert isinstance(outcomes[4], NoValidHost) and outcomes[4].instance_uuid == "vm-5"
    assert [s.instance_uuid for s in claimed] == ["vm-1", "vm-3", "vm-4"]


def _sriov(name: str) -> Any:
    """A spec of one server, its one SR-IOV port asking for bandwidth in group ``group-{name}``."""
    group = {"id": f"group-{name}", "resources": BANDWIDTH}
    sriov_port = port(f"port-{name}", group, vnic_type="direct")
    return spec(instance_uuids=(f"vm-{name}",), ports=(sriov_port,))


def _two_pf_hosts(suffix: str) -> tuple[Any, Any, list[Any]]:
    """cn1 (more RAM) with PF pfa, which holds the bandwidth and has one VF left, and pfb with
    VFs but no bandwidth; cn2 with pf2; and a candidate on each with the group ``suffix``
    mapped to the PF holding the bandwidth."""
    cn1 = host(
        "cn1", free_ram_mb=65536, free_vfs={"pfa": 1, "pfb": 8},
        pf_providers={"rp-pfa": "pfa", "rp-pfb": "pfb"},
    )  # fmt: skip
    cn2 = host("cn2", free_vfs={"pf2": 8}, pf_providers={"rp-pf2": "pf2"})
    candidates = [
        candidate(cn1, extra={"rp-pfa": BANDWIDTH}, mappings={"": ("rp-cn1",), suffix: ("rp-pfa",)}),
        candidate(cn2, extra={"rp-pf2": BANDWIDTH}, mappings={"": ("rp-cn2",), suffix: ("rp-pf2",)}),
    ]  # fmt: skip
    return cn1, cn2, candidates


def test_members_take_the_vfs_of_the_pf_that_holds_their_bandwidth() -> None:
    # cn1 is preferred (more RAM); its PF "pfa" holds the bandwidth and has one VF left, "pfb"
    # has VFs but no bandwidth. The first member takes pfa's last VF; the second, whose port
    # group has another suffix than the candidates', must not count a VF of pfb as its own.
    first, second = _sriov("1"), _sriov("2")
    suffix = group_suffix("group-1")
    cn1, cn2, candidates = _two_pf_hosts(suffix)
    renamed = suffixes(build_query(first), build_query(second))
    claimed: list[Selection] = []
    members = [
        Member(first, recording(claimed)),
        Member(second, recording(claimed), view=lambda c: as_seen_by(c, renamed)),
    ]
    outcomes = Scheduler(SchedulerConfig(weighers=("RAMWeigher",))).select_each(
        members, candidates, [cn1, cn2]
    )
    assert all(isinstance(o, Schedule) for o in outcomes)
    assert [s.host for s in claimed] == ["cn1", "cn2"]
    # The second member's selection maps its own port group to the PF of cn2.
    assert claimed[1].mappings[group_suffix("group-2")] == ("rp-pf2",)


def test_a_later_pass_of_a_shape_is_ranked_in_its_first_requests_suffixes() -> None:
    # The shape's first request (vm-0) asked in its own suffixes; a later pass asks in them
    # too, and each member, the leader included, sees the candidates through its own.
    first, leader, member = _sriov("0"), _sriov("1"), _sriov("2")
    suffix = group_suffix("group-0")
    cn1, cn2, candidates = _two_pf_hosts(suffix)
    claimed: list[Selection] = []
    members = []
    for own in (leader, member):
        renamed = suffixes(build_query(first), build_query(own))
        members.append(
            Member(own, recording(claimed), view=lambda c, r=renamed: as_seen_by(c, r))  # type: ignore[misc]
        )
    outcomes = Scheduler(SchedulerConfig(weighers=("RAMWeigher",))).select_each(
        members, candidates, [cn1, cn2], shape=first
    )
    assert all(isinstance(o, Schedule) for o in outcomes)
    # The leader took pfa's last VF, so the member's port could not follow its bandwidth there.
    assert [s.host for s in claimed] == ["cn1", "cn2"]
    assert claimed[0].mappings == {"": ("rp-cn1",), group_suffix("group-1"): ("rp-pfa",)}
    assert claimed[0].port_allocations == {"port-1": {"group-1": "rp-pfa"}}
    assert claimed[1].port_allocations == {"port-2": {"group-2": "rp-pf2"}}


def test_a_shape_keeps_its_first_request_and_the_latest_shapes_are_kept() -> None:
    shapes = Shapes(size=2)
    one, two = server("1"), server("2")
    kept = shapes.get("a", one)
    assert shapes.get("a", two) is kept and kept.spec is one
    shapes.get("b", two)
    shapes.get("a", two)  # "a" is the latest again, so "b" goes first
    shapes.get("c", two)
    assert shapes.get("a", two) is kept
    assert shapes.get("b", two).spec is two and shapes.get("b", one).spec is two


def _room_for_three() -> tuple[list[Any], list[Any], dict[str, Any]]:
    """Room for two servers on cn1 and one on cn2 (RAM), and five members."""
    cn1 = host("cn1", free_ram_mb=4096)
    cn2 = host("cn2", free_ram_mb=2048)
    summaries = summaries_of({
        "rp-cn1": {"resources": {"MEMORY_MB": {"capacity": 4096, "used": 0}}},
        "rp-cn2": {"resources": {"MEMORY_MB": {"capacity": 2048, "used": 0}}},
    })  # fmt: skip
    return [cn1, cn2], [candidate(cn1), candidate(cn2)], summaries


def _together(claims: list[Selection], granted: bool | Exception) -> tuple[list[list[str]], Any]:
    """A write of several claims that records each call's instances and grants them all, or
    refuses them all, or fails."""
    calls: list[list[str]] = []

    def claim_together(chosen: Any) -> bool:
        calls.append([selection.instance_uuid for _, selection in chosen])
        if isinstance(granted, Exception):
            raise granted
        if granted:
            claims.extend(selection for _, selection in chosen)
        return granted

    return calls, claim_together


def _pass(claim_together: Any = None) -> tuple[list[Any], list[Selection]]:
    hosts, candidates, summaries = _room_for_three()
    one_by_one: list[Selection] = []
    members = [Member(spec(instance_uuids=(f"vm-{i}",)), recording(one_by_one)) for i in range(5)]
    outcomes = Scheduler(SchedulerConfig(weighers=("RAMWeigher",))).select_each(
        members, candidates, hosts, provider_summaries=summaries, claim_together=claim_together
    )
    return outcomes, one_by_one


def _placed(outcomes: list[Any]) -> list[Any]:
    return [o.selections if isinstance(o, Schedule) else type(o).__name__ for o in outcomes]


def test_claims_written_together_make_the_pass_claims_one_by_one_make() -> None:
    alone, claimed_alone = _pass()
    together: list[Selection] = []
    calls, claim_together = _together(together, True)
    outcomes, one_by_one = _pass(claim_together)
    assert _placed(outcomes) == _placed(alone)
    assert _placed(outcomes)[3:] == ["NoValidHost", "NoValidHost"]
    assert calls == [["vm-0", "vm-1", "vm-2"]] and one_by_one == []
    assert together == claimed_alone


def test_claims_refused_together_are_claimed_one_by_one() -> None:
    alone, claimed_alone = _pass()
    for refusal in (False, RuntimeError("placement went away")):
        nothing: list[Selection] = []
        calls, claim_together = _together(nothing, refusal)
        outcomes, one_by_one = _pass(claim_together)
        assert calls == [["vm-0", "vm-1", "vm-2"]] and nothing == []
        assert _placed(outcomes) == _placed(alone)
        assert one_by_one == claimed_alone


def test_a_shape_builds_its_query_again_only_for_other_zones_or_another_limit() -> None:
    kept = Shapes().get("a", server("1", availability_zone="az1"))
    zones = {"az1": ["agg-1"]}
    first = kept.query(zones, 10)
    assert first == build_query(kept.spec, az_aggregates=zones, limit=10)
    assert kept.query({"az1": ["agg-1"]}, 10) is first
    moved = {"az1": ["agg-1", "agg-2"]}
    assert kept.query(moved, 10) == build_query(kept.spec, az_aggregates=moved, limit=10) != first
    assert kept.query(moved, 20) == build_query(kept.spec, az_aggregates=moved, limit=20)

"""The per-group explanation of a Placement query that found nothing, against a fake Placement
whose answers are rules over the query's pairs."""

from __future__ import annotations

from collections.abc import Callable

from berth.compute.objects.diagnosis import Diagnosis, GroupVerdict, Shortfall
from berth.compute.scheduler.explain import Probes, explain
from berth.compute.scheduler.placement_query import Group, PlacementQuery
from tests.unit.compute import factories

Pairs = list[tuple[str, str]]
SPEC = factories.spec()
PORT = ("port-1", "group-1")


def _probes(candidates: Callable[[dict[str, list[str]]], bool]) -> tuple[Probes, list[Pairs]]:
    asked: list[Pairs] = []

    def ask(pairs: Pairs) -> bool:
        asked.append(pairs)
        by_key: dict[str, list[str]] = {}
        for key, value in pairs:
            by_key.setdefault(key, []).append(value)
        return candidates(by_key)

    return Probes(ask, lambda pairs: True), asked


def test_two_classes_that_fit_only_apart() -> None:
    query = PlacementQuery(groups=(Group("", {"VCPU": 4, "MEMORY_MB": 4096}),))
    probes, _ = _probes(lambda q: "," not in q["resources"][0])
    verdicts, together = explain(query, SPEC, probes)
    assert verdicts == (
        GroupVerdict(
            "flavor", "", False, (Shortfall("resources-together", "MEMORY_MB:4096,VCPU:4"),)
        ),
    )
    assert together == ()


def test_a_pinned_compute_node_without_room() -> None:
    query = PlacementQuery(groups=(Group("", {"VCPU": 4}, in_tree="node-1"),))
    probes, _ = _probes(lambda q: "in_tree" not in q)
    ((verdict,), _) = explain(query, SPEC, probes)
    assert verdict.shortfalls == (Shortfall("in-tree", "node-1"),)


def test_a_port_whose_groups_fit_only_under_different_providers() -> None:
    query = PlacementQuery(
        groups=(
            Group("", {"VCPU": 1}),
            Group("bw", {"NET_BW_EGR_KILOBIT_PER_SEC": 10}),
            Group("pps", {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 10}),
        ),
        same_subtree=(("bw", "pps"),),
        group_policy="none",
        port_groups={"bw": PORT, "pps": PORT},
    )
    probes, asked = _probes(lambda q: "same_subtree" not in q)
    verdicts, together = explain(query, SPEC, probes)
    assert [v.met_alone for v in verdicts] == [True, True, True]
    assert [v.owner for v in verdicts] == ["flavor", "port-1", "port-1"]
    assert together == (Shortfall("same-subtree", "bw,pps", detail=(("port", "port-1"),)),)
    # Each question is limited to one answer.
    assert all(("limit", "1") in pairs for pairs in asked)
    text = Diagnosis(0, 0, 0).with_groups(verdicts, together).render()
    assert "port port-1's request groups bw,pps fit only under different providers" in text


def test_rules_that_hold_only_apart_are_said_so() -> None:
    # A zone and a port's segments: hosts in each, none in both.
    group = Group("", {"VCPU": 1}, member_of=(("zone-agg",), ("segment-agg",)))
    probes, _ = _probes(lambda q: len(q.get("member_of", [])) < 2)
    ((verdict,), _) = explain(PlacementQuery(groups=(group,)), SPEC, probes)
    assert verdict.shortfalls == (Shortfall("rules-together"),)
    assert verdict.render() == "flavor: each of its rules can be met, but never all at once"


def test_a_diagnosis_keeps_its_groups_through_json_and_reads_a_1_0_document() -> None:
    bandwidth = Shortfall(
        "insufficient-resource",
        "NET_BW_IGR_KILOBIT_PER_SEC",
        5000,
        (("kind", "ingress bandwidth"), ("unit", "kbps"), ("physical_network", "PHYSNET1")),
    )
    diagnosis = Diagnosis(2, 0, 0).with_groups(
        (GroupVerdict("port-1", "g", False, (bandwidth,), "group-1"),)
    )
    again = Diagnosis.from_json(diagnosis.to_json())
    assert again == diagnosis
    assert again.render() == (
        "0/2 hosts are available: Placement returned 0; port port-1: no provider has 5000 kbps "
        "of ingress bandwidth (NET_BW_IGR_KILOBIT_PER_SEC) on physical network PHYSNET1"
    )
    old = {"v": "1.0", "hosts": 1, "placement_hosts": 0, "available": 0}
    assert Diagnosis.from_json(old).groups == ()

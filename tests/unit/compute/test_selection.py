"""Choosing hosts: alternates in the chosen cell, max_attempts, the seeded subset pick, claims
that fail, and instances of one request that consume what earlier ones took."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from berth.compute.scheduler import (
    Candidate,
    Claim,
    HostState,
    NoValidHost,
    RequestSpec,
    Schedule,
    Scheduler,
    SchedulerConfig,
    Selection,
    ServerGroup,
)
from tests.unit.compute.factories import (
    CELL1,
    CELL2,
    candidate,
    host,
    port,
    recording,
    spec,
    summaries_of,
)

RAM_ONLY = {"weighers": ("RAMWeigher",)}


def ram_hosts(*specs: tuple[str, str, int]) -> list[HostState]:
    """Hosts (name, cell, free RAM): with the RAM weigher alone, more RAM ranks higher."""
    return [host(name, cell, free_ram_mb=ram) for name, cell, ram in specs]


def run(
    s: RequestSpec,
    hosts: Sequence[HostState],
    candidates: Sequence[Candidate] | None = None,
    *,
    claim: Claim | None = None,
    summaries: Mapping[str, Mapping[str, Any]] | None = None,
    **config: Any,
) -> Schedule:
    settings = {**RAM_ONLY, **config}
    return Scheduler(SchedulerConfig(**settings)).select_destinations(
        s,
        candidates if candidates is not None else [candidate(h) for h in hosts],
        hosts,
        claim or (lambda _: True),
        provider_summaries=summaries_of(summaries or {}),
    )


def names(selections: Sequence[Selection]) -> list[str]:
    return [s.host for s in selections]


HOSTS = ram_hosts(
    ("a", CELL1, 9000),
    ("b", CELL2, 8000),
    ("c", CELL1, 7000),
    ("d", CELL2, 6000),
    ("e", CELL1, 5000),
    ("f", CELL1, 4000),
)


def test_alternates_come_from_the_chosen_hosts_cell_in_rank_order() -> None:
    [first] = run(spec(), HOSTS).selections
    assert names(first) == ["a", "c", "e"]
    assert {s.cell_uuid for s in first} == {CELL1}
    # Each alternate carries its own allocation request.
    assert [next(iter(s.allocations)) for s in first] == ["rp-a", "rp-c", "rp-e"]
    assert all(s.instance_uuid == "inst-0" for s in first)


def test_max_attempts_bounds_the_list() -> None:
    assert names(run(spec(), HOSTS, max_attempts=1).selections[0]) == ["a"]
    assert names(run(spec(), HOSTS, max_attempts=2).selections[0]) == ["a", "c"]
    assert names(run(spec(), HOSTS, max_attempts=10).selections[0]) == ["a", "c", "e", "f"]
    chosen_in_cell2 = run(spec(ignore_hosts=frozenset({"a"})), HOSTS, max_attempts=10)
    assert names(chosen_in_cell2.selections[0]) == ["b", "d"]


def test_selection_carries_what_the_conductor_needs() -> None:
    bw = {"id": "g1", "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}, "required": []}
    s = spec(ports=(port("port-1", bw), port("port-2")))
    h = HOSTS[0]
    c = candidate(h, extra={"pf": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}}, mappings={"g1": ("pf",)})
    [[chosen]] = run(s, [h], [c]).selections
    assert (chosen.host, chosen.node, chosen.node_uuid, chosen.cell_uuid) == (
        "a",
        "a",
        "rp-a",
        CELL1,
    )
    assert chosen.allocation_request == c.allocation_request
    assert chosen.allocation_request_version == "1.35"
    assert chosen.mappings == {"g1": ("pf",)}
    assert chosen.port_allocations == {"port-1": {"g1": "pf"}}


def test_host_subset_size_picks_among_the_best_reproducibly() -> None:
    def chosen(seed: int) -> str:
        return run(spec(), HOSTS, host_subset_size=3, seed=seed).selections[0][0].host

    assert [chosen(42) for _ in range(3)] == [chosen(42)] * 3
    picks = Counter(chosen(seed) for seed in range(60))
    assert set(picks) == {"a", "b", "c"}  # only the three best, and each of them
    # Without a configured seed the request's instance uuids give one, logged and returned.
    assert (
        run(spec(), HOSTS, host_subset_size=3).seed == run(spec(), HOSTS, host_subset_size=3).seed
    )
    assert run(spec(), HOSTS, seed=5).seed == 5


def test_the_seed_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="berth.compute.scheduler.selection"):
        run(spec(), HOSTS, seed=1234)
    assert "seed 1234" in caplog.text


def test_equal_weights_are_shuffled_by_the_seed() -> None:
    equal = ram_hosts(*((f"h{i}", CELL1, 1000) for i in range(8)))
    firsts = {run(spec(), equal, seed=seed).selections[0][0].host for seed in range(40)}
    assert len(firsts) > 3
    assert run(spec(), equal, seed=3).selections == run(spec(), equal, seed=3).selections


def test_a_refused_claim_moves_to_the_next_candidate() -> None:
    tried: list[str] = []

    def claim(selection: Selection) -> bool:
        tried.append(selection.host)
        return selection.host not in {"a", "b"}

    schedule = run(spec(), HOSTS, claim=claim)
    assert tried == ["a", "b", "c"]
    assert names(schedule.selections[0]) == ["c", "e", "f"]  # a refused: not an alternate
    assert schedule.diagnoses[0].reasons("Claim") == {"conflict": 2}


def test_a_refused_candidate_leaves_the_hosts_other_candidates() -> None:
    h = HOSTS[0]
    pf1 = candidate(h, extra={"pf1": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}})
    pf2 = candidate(h, extra={"pf2": {"NET_BW_EGR_KILOBIT_PER_SEC": 1}})
    tried: list[str] = []

    def claim(selection: Selection) -> bool:
        tried.append(sorted(selection.allocations)[0])  # the host's own root sorts last
        return len(tried) > 1  # the first refused, whichever the shuffle put first

    [[chosen]] = run(spec(), [h], [pf1, pf2], claim=claim).selections
    assert sorted(tried) == ["pf1", "pf2"]
    assert tried[1] in chosen.allocations


def test_hosts_refused_for_an_earlier_instance_still_count() -> None:
    taken = {"a"}  # a conflicts at once; b takes one instance, then conflicts too

    def claim(selection: Selection) -> bool:
        if selection.host in taken:
            return False
        taken.add(selection.host)
        return True

    with pytest.raises(NoValidHost) as raised:
        run(spec(n=2), HOSTS[:2], claim=claim)
    assert raised.value.instance_uuid == "inst-1"
    assert [s.host for s in raised.value.claimed] == ["b"]
    assert str(raised.value) == (
        "0/2 hosts are available: Placement returned 2; Claim removed 2 (conflict: 2)"
    )


def test_all_claims_refused_is_no_valid_host() -> None:
    with pytest.raises(NoValidHost) as raised:
        run(spec(), HOSTS[:2], claim=lambda _: False)
    assert str(raised.value) == (
        "0/2 hosts are available: Placement returned 2; Claim removed 2 (conflict: 2)"
    )


def test_instances_consume_what_earlier_ones_took() -> None:
    # a ranks first until the first instance's 2048 MB leave it below b.
    hosts = ram_hosts(("a", CELL1, 10_000), ("b", CELL1, 9_000))
    schedule = run(spec(n=3), hosts)
    assert [sel[0].host for sel in schedule.selections] == ["a", "b", "a"]
    assert [sel[0].instance_uuid for sel in schedule.selections] == ["inst-0", "inst-1", "inst-2"]


def test_provider_capacity_is_not_counted_twice() -> None:
    # a has room for one instance only, whatever its HostState says.
    hosts = ram_hosts(("a", CELL1, 99_000), ("b", CELL1, 1_000))
    summaries = {
        "rp-a": {"resources": {"VCPU": {"capacity": 3, "used": 0}}},
        "rp-b": {"resources": {"VCPU": {"capacity": 30, "used": 0}}},
    }
    schedule = run(spec(n=2), hosts, summaries=summaries)
    assert [sel[0].host for sel in schedule.selections] == ["a", "b"]
    assert schedule.diagnoses[1].reasons("RequestCapacity") == {"taken-by-earlier-instance": 1}


def test_anti_affinity_between_instances_of_one_request() -> None:
    group = ServerGroup("g", "anti-affinity")
    claimed: list[Selection] = []
    s = spec(n=3, server_group=group)
    hosts = ram_hosts(("a", CELL1, 10_000), ("b", CELL1, 9_000))
    with pytest.raises(NoValidHost) as raised:
        run(s, hosts, claim=recording(claimed))
    assert raised.value.instance_uuid == "inst-2"
    assert [c.host for c in raised.value.claimed] == ["a", "b"]  # to be released by the caller
    assert raised.value.claimed == tuple(claimed)
    assert raised.value.diagnosis.render() == (
        "0/2 hosts are available: Placement returned 2; "
        "ServerGroupAntiAffinityFilter removed 2 (host-in-group: 2)"
    )


def test_affinity_and_soft_affinity_keep_instances_together() -> None:
    hosts = ram_hosts(("a", CELL1, 10_000), ("b", CELL1, 9_000))
    hard = run(spec(n=3, server_group=ServerGroup("g", "affinity")), hosts)
    assert {sel[0].host for sel in hard.selections} == {"a"}
    soft = run(
        spec(n=3, server_group=ServerGroup("g", "soft-affinity")),
        hosts,
        weighers=("RAMWeigher", "ServerGroupSoftAffinityWeigher"),
        weigher_multipliers={"ServerGroupSoftAffinityWeigher": 10.0},
    )
    assert {sel[0].host for sel in soft.selections} == {"a"}
    without = run(spec(n=3), hosts)
    assert {sel[0].host for sel in without.selections} == {"a", "b"}


def test_virtual_functions_taken_by_an_earlier_instance() -> None:
    bw: dict[str, Any] = {
        "id": "g1",
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10},
        "required": [],
    }
    s = spec(n=2, ports=(port("p", bw, vnic_type="direct"),))
    hosts = [
        host("a", free_ram_mb=10_000, free_vfs={"ens1": 1}, pf_providers={"a-pf": "ens1"}),
        host("b", free_ram_mb=1_000, free_vfs={"ens1": 1}, pf_providers={"b-pf": "ens1"}),
    ]
    cands = [
        candidate(h, extra={f"{h.host}-pf": bw["resources"]}, mappings={"g1": (f"{h.host}-pf",)})
        for h in hosts
    ]
    schedule = run(s, hosts, cands)
    assert [sel[0].host for sel in schedule.selections] == ["a", "b"]
    assert schedule.diagnoses[1].reasons("PciPassthroughFilter") == {"no-free-vf": 1}


def test_unknown_hosts_are_counted() -> None:
    ghost = candidate("rp-ghost")
    with pytest.raises(NoValidHost) as raised:
        run(spec(), HOSTS[:1], [ghost, candidate(HOSTS[0])], claim=lambda _: False)
    assert raised.value.diagnosis.render() == (
        "0/2 hosts are available: Placement returned 2; HostState removed 1 (unknown-host: 1); "
        "Claim removed 1 (conflict: 1)"
    )


def test_no_candidates_at_all() -> None:
    with pytest.raises(NoValidHost) as raised:
        run(spec(), HOSTS, [])
    d = raised.value.diagnosis
    assert d.render() == "0/6 hosts are available: Placement returned 0"
    assert d.with_placement_shortfall({"VCPU": 6}).render().endswith("(insufficient VCPU: 6)")


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="host_subset_size"):
        SchedulerConfig(host_subset_size=0)
    with pytest.raises(ValueError, match="max_attempts"):
        SchedulerConfig(max_attempts=0)
    with pytest.raises(ValueError, match="Bogus"):
        Scheduler(SchedulerConfig(enabled_filters=("Bogus",)))

"""The options a pass keeps between instances: what they ask again, and that a ranking made from
them is the one made afresh."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate, ProviderUsage
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import DEFAULT_FILTERS, HostFilter, build_pipeline
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.ranking import Options, Outcomes, Ranking
from berth.compute.scheduler.weighers import (
    DEFAULT_WEIGHERS,
    RAMWeigher,
    build_weighers,
    normalise,
    totals,
)
from tests.unit.compute.factories import candidate, host, spec, summaries_of


class _Counting(HostFilter):
    """Refuses hosts named no-*, and remembers whom it was asked about."""

    NAME = "Counting"
    REASONS = frozenset({"named-no"})

    def __init__(self) -> None:
        self.asked: list[str] = []

    def check(self, host: Any, spec: RequestSpec, candidate: Candidate) -> str | None:
        self.asked.append(host.host)
        return "named-no" if host.host.startswith("no-") else None


class _Weighing(RAMWeigher):
    def __init__(self) -> None:
        self.weighed: list[str] = []

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        self.weighed.append(host.host)
        return super().raw(host, spec, candidate)


def _listed(ranking: Ranking) -> list[tuple[str, list[tuple[float, int]]]]:
    return [(r.host.host, [(w, id(c)) for w, c in r.options]) for r in ranking]


def test_options_ask_the_filters_and_weighers_only_about_nodes_that_changed() -> None:
    counting, weighing = _Counting(), _Weighing()
    pipeline, weighers = (counting,), ((weighing, 1.0),)
    hosts = [host("yes-1"), host("yes-2", free_ram_mb=1024), host("no-1")]
    candidates = [candidate(h) for h in hosts]
    by_node = {h.node_uuid: h for h in hosts}
    usage = ProviderUsage({})
    options = Options(candidates, by_node, usage)
    request = spec()

    def rank(asked: RequestSpec = request) -> tuple[list[str], str]:
        recorder = Recorder(3, 3)
        ranking = options.rank(asked, pipeline, weighers, recorder, random.Random(1))
        return [r.host.host for r in ranking], recorder.result(len(ranking)).render()

    first = rank()
    assert first[0] == ["yes-1", "yes-2"] and "Counting removed 1 (named-no: 1)" in first[1]
    assert sorted(counting.asked) == ["no-1", "yes-1", "yes-2"]
    assert sorted(weighing.weighed) == ["yes-1", "yes-2"]
    assert rank() == first and len(counting.asked) == 3 and len(weighing.weighed) == 2
    # An instance lands on yes-1 (now with less free RAM than yes-2): only it is asked again.
    landed = hosts[0].consume("vm-1", candidates[0], {})
    by_node["rp-yes-1"] = dataclasses.replace(landed, free_ram_mb=512)
    options.landed(candidates[0])
    assert rank()[0] == ["yes-2", "yes-1"]
    assert counting.asked[3:] == ["yes-1"] and weighing.weighed[2:] == ["yes-1"]
    # A refused claim drops the candidate: its node is gone from the ranking.
    options.drop(candidates[1])
    assert rank()[0] == ["yes-1"] and options.emptied == 1
    # Another spec: every node is asked again.
    rank(spec(instance_uuids=("other",)))
    assert sorted(counting.asked[4:]) == ["no-1", "yes-1"]


def test_passes_of_one_shape_ask_again_only_about_nodes_that_changed() -> None:
    counting, weighing = _Counting(), _Weighing()
    pipeline, weighers = (counting,), ((weighing, 1.0),)
    hosts = [host("yes-1"), host("yes-2", free_ram_mb=1024), host("no-1")]
    candidates = [candidate(h) for h in hosts]
    kept, request = Outcomes(), spec()

    def first_rank(by_node: dict[str, HostState], asked: RequestSpec = request) -> list[str]:
        options = Options(candidates, dict(by_node), ProviderUsage({}), kept)
        recorder = Recorder(3, 3)
        ranking = options.rank(asked, pipeline, weighers, recorder, random.Random(1))
        assert "Counting removed 1 (named-no: 1)" in recorder.result(len(ranking)).render()
        # Ranked again before anything landed (the first member found no host): nothing
        # changed, and what the shape keeps is still every node's outcome.
        options.rank(asked, pipeline, weighers, Recorder(3, 3), random.Random(1))
        return [r.host.host for r in ranking]

    by_node = {h.node_uuid: h for h in hosts}
    assert first_rank(by_node) == ["yes-1", "yes-2"] and len(counting.asked) == 3
    assert first_rank(by_node) == ["yes-1", "yes-2"] and len(counting.asked) == 3
    assert len(weighing.weighed) == 2
    # yes-1 changed between the passes (its host cache made a new HostState): it is ranked
    # again, and alone.
    by_node["rp-yes-1"] = dataclasses.replace(hosts[0], free_ram_mb=512)
    assert first_rank(by_node) == ["yes-2", "yes-1"]
    assert counting.asked[3:] == ["yes-1"] and weighing.weighed[2:] == ["yes-1"]
    # Placement proposes another candidate on yes-2: it is ranked again.
    candidates[1] = candidate(hosts[1], {"VCPU": 2, "MEMORY_MB": 512})
    assert first_rank(by_node) == ["yes-2", "yes-1"] and counting.asked[4:] == ["yes-2"]
    # Another spec: every node is asked again.
    first_rank(by_node, spec(instance_uuids=("other",)))
    assert sorted(counting.asked[5:]) == ["no-1", "yes-1", "yes-2"]


@st.composite
def _passes(draw: st.DrawFn) -> tuple[list[HostState], list[Candidate], dict[str, Any], list[int]]:
    """Hosts (some down, some unknown to the scheduler), their candidates (some on a shared
    provider, some hosts with two), provider summaries, and the candidates taken in turn."""
    hosts, candidates, summaries = [], [], {}
    for i in range(draw(st.integers(1, 12))):
        h = host(
            f"h{i}",
            up=draw(st.booleans()) or draw(st.booleans()),
            free_ram_mb=draw(st.sampled_from([1024, 2048, 4096])),
            failed_builds=draw(st.integers(0, 1)),
        )
        if draw(st.integers(0, 5)):
            hosts.append(h)
        summaries[h.node_uuid] = {"resources": {"VCPU": {"capacity": 4, "used": 0}}}
        if draw(st.booleans()):  # the summaries may tell the provider's tree
            summaries[h.node_uuid]["root_provider_uuid"] = h.node_uuid
        for _ in range(draw(st.integers(1, 2))):
            shared = draw(st.booleans())
            extra = {"pool": {"DISK_GB": 10}} if shared else None
            candidates.append(candidate(h, {"VCPU": 2, "MEMORY_MB": 512}, extra=extra))
    summaries["pool"] = {"resources": {"DISK_GB": {"capacity": draw(st.sampled_from([20, 40]))}}}
    candidates = draw(st.permutations(candidates))  # a node's candidates need not be together
    taken = draw(st.lists(st.integers(0, len(candidates) - 1), max_size=6))
    return hosts, candidates, summaries, taken


@settings(max_examples=150, deadline=None)
@given(_passes(), st.integers(0, 2**32))
def test_a_kept_ranking_is_the_one_made_afresh(pass_: Any, seed: int) -> None:
    hosts, candidates, summaries, taken = pass_
    pipeline = build_pipeline(DEFAULT_FILTERS)
    weighers = build_weighers(DEFAULT_WEIGHERS, {})
    by_node = {h.node_uuid: h for h in hosts}
    read = summaries_of(summaries)
    usage = ProviderUsage(read)
    kept = Options(candidates, by_node, usage)
    request = spec()
    dropped: set[int] = set()
    consumed: list[Candidate] = []
    for step, index in enumerate(taken):
        chosen = candidates[index]
        if step % 3 == 2:  # a refused claim
            kept.drop(chosen)
            dropped.add(id(chosen))
        elif chosen.root in by_node and usage.fits(chosen) and id(chosen) not in dropped:
            usage.consume(chosen)
            consumed.append(chosen)
            by_node[chosen.root] = by_node[chosen.root].consume(f"vm-{step}", chosen, {})
            kept.landed(chosen)
        afresh_usage = ProviderUsage(read)
        for earlier in consumed:
            afresh_usage.consume(earlier)
        alive = [c for c in candidates if id(c) not in dropped]
        afresh = Options(alive, dict(by_node), afresh_usage)
        recorders = Recorder(9, 9), Recorder(9, 9)
        ours = kept.rank(request, pipeline, weighers, recorders[0], random.Random(seed))
        theirs = afresh.rank(request, pipeline, weighers, recorders[1], random.Random(seed))
        assert _listed(ours) == _listed(theirs)
        assert recorders[0].result(0).render() == recorders[1].result(0).render()


@settings(max_examples=100, deadline=None)
@given(_passes(), st.lists(st.integers(0, 11), max_size=4), st.integers(0, 2**32))
def test_outcomes_kept_between_passes_rank_as_made_afresh(
    pass_: Any, changed: list[int], seed: int
) -> None:
    hosts, candidates, summaries, taken = pass_
    pipeline = build_pipeline(DEFAULT_FILTERS)
    weighers = build_weighers(DEFAULT_WEIGHERS, {})
    read = summaries_of(summaries)
    kept, request = Outcomes(), spec()
    by_node = {h.node_uuid: h for h in hosts}
    for step in range(3):
        # Between passes some hosts change (a new HostState, as the host cache makes them).
        for i in changed:
            if i < len(hosts) and step:
                node = hosts[i].node_uuid
                by_node[node] = dataclasses.replace(
                    by_node[node], free_ram_mb=by_node[node].free_ram_mb // 2, up=i % 2 == 0
                )
        _rank_alike_and_land(
            candidates, by_node, read, kept, taken, (request, pipeline, weighers, seed)
        )


_weights = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.5, float("nan")]),
    st.floats(-1e6, 1e6, allow_nan=False),
)


@given(
    st.integers(0, 6).flatmap(
        lambda n: st.lists(st.lists(_weights, min_size=n, max_size=n), max_size=4)
    ),
    st.lists(st.sampled_from([1.0, -1.0, 2.0, 1e6, 0.5]), min_size=4, max_size=4),
)
def test_totals_add_up_as_floats_do(columns: list[list[float]], multipliers: list[float]) -> None:
    """The same values as summing ``normalise``d columns in Python, signed zeros and NaNs
    (wherever they are in a column) included."""
    rows = len(columns[0]) if columns else 0
    expected = [0.0] * rows
    for column, multiplier in zip(columns, multipliers, strict=False):
        expected = [t + multiplier * w for t, w in zip(expected, normalise(column), strict=True)]
    raws = np.array(columns, dtype=float).reshape(len(columns), rows).T
    found = totals(raws, multipliers[: len(columns)]).tolist()
    assert [repr(w) for w in found] == [repr(w) for w in expected]


def test_a_pass_of_the_very_candidates_before_starts_from_its_first_ranking() -> None:
    counting, weighing = _Counting(), _Weighing()
    pipeline, weighers = (counting,), ((weighing, 1.0),)
    hosts = [host("yes-1"), host("yes-2", free_ram_mb=1024), host("no-1"), host("yes-3")]
    candidates = [candidate(h) for h in hosts]
    kept, request = Outcomes(), spec()
    by_node = {h.node_uuid: h for h in hosts[:3]}  # yes-3 is unknown to the scheduler

    def first_rank(listed: list[Candidate], asked: RequestSpec = request) -> tuple[Any, ...]:
        options = Options(listed, dict(by_node), ProviderUsage({}), kept)
        recorder = Recorder(4, 4)
        ranking = options.rank(asked, pipeline, weighers, recorder, random.Random(1))
        ranked = [r.host.host for r in ranking]
        # As a pass afresh ranks them (with filters and weighers of its own).
        afresh = Options(listed, dict(by_node), ProviderUsage({}))
        alike = (_Counting(),), ((_Weighing(), 1.0),)
        expected = afresh.rank(asked, *alike, Recorder(4, 4), random.Random(1))
        assert ranked == [r.host.host for r in expected]
        return options.roots, sorted(ranked), recorder.result(len(ranking)).render()

    roots, ranked, diagnosis = first_rank(list(candidates))
    assert ranked == ["yes-1", "yes-2"] and "unknown-host: 1" in diagnosis
    # The same candidates again (another list): grouped by node as they were, nothing asked.
    again = first_rank(list(candidates))
    assert again[0] is roots and again[1:] == (ranked, diagnosis)
    assert len(counting.asked) == 3 and len(weighing.weighed) == 2
    # Between passes yes-1 has less free RAM, no-1 is renamed yes-0 and yes-3 is known: these
    # nodes alone are worked out again, as a pass afresh would.
    by_node["rp-yes-1"] = dataclasses.replace(hosts[0], free_ram_mb=512)
    by_node["rp-no-1"] = dataclasses.replace(hosts[2], host="yes-0")
    by_node["rp-yes-3"] = hosts[3]
    changed = first_rank(list(candidates))
    assert changed[0] is roots and changed[1] == ["yes-0", "yes-1", "yes-2", "yes-3"]
    assert "removed" not in changed[2]
    assert sorted(counting.asked[3:]) == ["yes-0", "yes-1", "yes-3"]
    assert sorted(weighing.weighed[2:]) == ["yes-0", "yes-1", "yes-3"]
    # Placement no longer proposes yes-2's candidate: the others are taken as they were.
    fewer = first_rank([candidates[0], candidates[2], candidates[3]])
    assert fewer[0] is not roots and fewer[1] == ["yes-0", "yes-1", "yes-3"]
    assert len(counting.asked) == 6
    # A candidate equal to yes-1's, but another object: grouped again, yes-1's outcome kept.
    copied = [dataclasses.replace(candidates[0]), candidates[2], candidates[3]]
    other = first_rank(copied)
    assert other[0] is not fewer[0] and other[1] == ["yes-0", "yes-1", "yes-3"]
    assert len(counting.asked) == 6
    # Another spec: every node is asked again.
    first_rank(copied, spec(instance_uuids=("other",)))
    assert sorted(counting.asked[6:]) == ["yes-0", "yes-1", "yes-3"]


@settings(max_examples=100, deadline=None)
@given(
    _passes(),
    st.lists(
        st.tuples(
            st.lists(st.integers(0, 11), max_size=3),
            st.sampled_from(["same", "copy", "drop", "swap", "add"]),
            st.booleans(),
        ),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 2**32),
)
def test_passes_kept_while_hosts_and_candidates_change_rank_as_made_afresh(
    pass_: Any, steps: list[tuple[list[int], str, bool]], seed: int
) -> None:
    """Between passes some hosts change or become known or unknown, the candidates are the
    same objects, or one is another object, or left out, or moved, or added; now and then the
    spec is another."""
    hosts, candidates, summaries, taken = pass_
    pipeline = build_pipeline(DEFAULT_FILTERS)
    weighers = build_weighers(DEFAULT_WEIGHERS, {})
    read = summaries_of(summaries)
    kept, request = Outcomes(), spec()
    known = {h.node_uuid: h for h in hosts}
    by_node = dict(known)
    listed = list(candidates)
    for changed, how, new_spec in steps:
        for i in changed:
            if i < len(hosts):
                node = hosts[i].node_uuid
                if node in by_node and i % 3 == 0:
                    del by_node[node]
                else:
                    was = by_node.get(node, known[node])
                    by_node[node] = dataclasses.replace(was, free_ram_mb=was.free_ram_mb // 2)
        listed = _changed(listed, candidates, how)
        if new_spec:
            request = spec(instance_uuids=(f"other-{len(changed)}",))
        _rank_alike_and_land(
            listed, by_node, read, kept, taken, (request, pipeline, weighers, seed)
        )


def _rank_alike_and_land(
    listed: list[Candidate],
    by_node: dict[str, HostState],
    read: Any,
    kept: Outcomes,
    taken: list[int],
    asked: tuple[RequestSpec, Any, Any, int],
) -> None:
    """A pass over ``listed`` with ``kept`` outcomes and one made afresh rank alike for every
    instance: the first two candidates ``taken`` land in both in turn, then one more ranks."""
    request, pipeline, weighers, seed = asked
    pools = [(dict(by_node), ProviderUsage(read)) for _ in range(2)]
    ours = Options(listed, *pools[0], kept)
    theirs = Options(listed, *pools[1])
    for landing, index in enumerate([*taken[:2], None]):
        recorders = Recorder(9, 9), Recorder(9, 9)
        rankings = [
            options.rank(request, pipeline, weighers, recorder, random.Random(seed))
            for options, recorder in zip((ours, theirs), recorders, strict=True)
        ]
        assert _listed(rankings[0]) == _listed(rankings[1])
        assert recorders[0].result(0).render() == recorders[1].result(0).render()
        chosen = listed[index] if index is not None and index < len(listed) else None
        if chosen is None or chosen.root not in by_node or not pools[0][1].fits(chosen):
            continue
        for options, (nodes, usage) in zip((ours, theirs), pools, strict=True):
            usage.consume(chosen)
            nodes[chosen.root] = nodes[chosen.root].consume(f"vm-{landing}", chosen, {})
            options.landed(chosen)


def _changed(listed: list[Candidate], proposed: list[Candidate], how: str) -> list[Candidate]:
    """The candidates of the next pass: ``listed`` as they were (another list), with one
    another object equal to it, one left out, two swapped, or one of ``proposed`` added."""
    listed = list(listed)
    if how == "copy" and listed:
        listed[0] = dataclasses.replace(listed[0])
    elif how == "drop" and len(listed) > 1:
        del listed[len(listed) // 2]
    elif how == "swap" and len(listed) > 1:
        listed[0], listed[-1] = listed[-1], listed[0]
    elif how == "add":
        listed.append(proposed[len(listed) % len(proposed)])
    return listed

"""Properties of the selection over random hosts, candidates, requests and pipelines:

- the chosen host and every alternate pass every filter of the pipeline;
- alternates are in the chosen host's cell, distinct, never the chosen host, and at most
  ``max_attempts - 1``;
- NoValidHost only when no (host, candidate) passes every filter and accepts the claim;
- hard anti-affinity between instances of one request puts each on its own host.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.compute.objects.request_spec import Image, PortRequest, SchedulerHints
from berth.compute.scheduler import (
    Candidate,
    HostState,
    NoValidHost,
    RequestSpec,
    Scheduler,
    SchedulerConfig,
    Selection,
    ServerGroup,
)
from berth.compute.scheduler.filters import FILTERS, build_pipeline
from berth.compute.scheduler.host_state import Aggregate
from tests.unit.compute.factories import candidate, flavor, host, port, recording, spec

CELLS = ("cell-1", "cell-2", "cell-3")
ZONES = ("nova", "az1", "az2")
INSTANCES = ("vm-1", "vm-2", "vm-3")
BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 10}
# The suffix of the mapping that numbers each candidate.
TAG = "candidate-number"


@st.composite
def hosts_and_candidates(draw: st.DrawFn) -> tuple[list[HostState], list[Candidate]]:
    n = draw(st.integers(1, 10))
    hosts = []
    candidates = []
    for i in range(n):
        name = f"h{i}"
        metadata = draw(st.sampled_from([{}, {"ssd": "true"}, {"ssd": "false"}]))
        h = host(
            name,
            draw(st.sampled_from(CELLS)),
            availability_zone=draw(st.sampled_from(ZONES)),
            disabled=draw(st.booleans()),
            up=draw(st.booleans()),
            free_ram_mb=draw(st.integers(0, 64)) * 1024,
            free_vcpus=draw(st.integers(0, 32)),
            failed_builds=draw(st.integers(0, 2)),
            instances=frozenset(draw(st.sets(st.sampled_from(INSTANCES), max_size=2))),
            aggregates=(Aggregate(f"agg-{i}", metadata=metadata),),
            supported_instances=draw(
                st.sampled_from([(), (("x86_64", "kvm", "hvm"),), (("aarch64", "kvm", "hvm"),)])
            ),
            free_vfs={"ens1": draw(st.integers(0, 2)), "ens2": draw(st.integers(0, 2))},
            pf_providers={f"{name}-pf1": "ens1", f"{name}-pf2": "ens2"},
        )
        hosts.append(h)
        for provider in draw(
            st.lists(st.sampled_from(["pf1", "pf2", "bridge"]), min_size=1, max_size=3)
        ):
            rp = f"{name}-{provider}"
            candidates.append(
                candidate(h, extra={rp: BW}, mappings={"": (h.node_uuid,), "g": (rp,)})
            )
    # Every candidate tells which it is, so a selection can be traced back to it: a mapping
    # no request group asks for (mappings are looked up by suffix only).
    candidates = [
        dataclasses.replace(c, mappings={**c.mappings, TAG: (str(i),)})
        for i, c in enumerate(candidates)
    ]
    return hosts, candidates


@st.composite
def requests(draw: st.DrawFn, instances: int = 1) -> RequestSpec:
    policy: Any = draw(st.sampled_from([None, "affinity", "anti-affinity"]))
    group = None
    if policy:
        group = ServerGroup(
            "g",
            policy,
            hosts=tuple(draw(st.lists(st.sampled_from(["h0", "h1", "h2"]), max_size=2))),
        )
    ports: tuple[PortRequest, ...] = ()
    if draw(st.booleans()):
        vnic = draw(st.sampled_from(["direct", "normal"]))
        ports = (port("p", {"id": "g", "resources": BW, "required": []}, vnic_type=vnic),)
    extra = draw(st.sampled_from([{}, {"aggregate_instance_extra_specs:ssd": "true"}]))
    return spec(
        n=instances,
        flavor=flavor(extra_specs=extra),
        image=Image("i", draw(st.sampled_from([{}, {"hw_architecture": "x86_64"}]))),
        availability_zone=draw(st.sampled_from([None, *ZONES])),
        hints=SchedulerHints(
            same_host=tuple(draw(st.sets(st.sampled_from(INSTANCES), max_size=1))),
            different_host=tuple(draw(st.sets(st.sampled_from(INSTANCES), max_size=1))),
        ),
        server_group=group,
        ignore_hosts=frozenset(draw(st.sets(st.sampled_from(["h0", "h1", "h3"]), max_size=2))),
        ports=ports,
    )


configs = st.builds(
    SchedulerConfig,
    enabled_filters=st.permutations(sorted(FILTERS)).flatmap(
        lambda names: st.integers(0, len(names)).map(lambda k: tuple(names[:k]))
    ),
    host_subset_size=st.integers(1, 4),
    max_attempts=st.integers(1, 5),
    seed=st.integers(0, 2**32),
)


def _tag(selection: Selection) -> int:
    [n] = selection.mappings[TAG]
    return int(n)


def _traced(selection: Selection, candidates: list[Candidate]) -> Candidate:
    return candidates[_tag(selection)]


def _passes(pipeline: Any, h: HostState, s: RequestSpec, c: Candidate) -> bool:
    return all(f.check(h, s, c) is None for f in pipeline)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    world=hosts_and_candidates(),
    request=requests(),
    config=configs,
    refused=st.sets(st.integers(0, 30)),
)
def test_selected_hosts_pass_every_filter_and_alternates_stay_in_the_cell(
    world: tuple[list[HostState], list[Candidate]],
    request: RequestSpec,
    config: SchedulerConfig,
    refused: set[int],
) -> None:
    hosts, candidates = world
    by_node = {h.node_uuid: h for h in hosts}
    pipeline = build_pipeline(config.enabled_filters)

    def claim(selection: Selection) -> bool:
        return _tag(selection) not in refused

    try:
        schedule = Scheduler(config).select_destinations(request, candidates, hosts, claim)
    except NoValidHost:
        valid = [
            i
            for i, c in enumerate(candidates)
            if i not in refused and _passes(pipeline, by_node[c.root], request, c)
        ]
        assert valid == []
        return
    [[chosen, *alternates]] = schedule.selections
    assert claim(chosen)
    for selection in (chosen, *alternates):
        c = _traced(selection, candidates)
        h = by_node[c.root]
        assert (selection.host, selection.cell_uuid) == (h.host, h.cell_uuid)
        assert _passes(pipeline, h, request, c)
    assert len(alternates) <= config.max_attempts - 1
    assert all(a.cell_uuid == chosen.cell_uuid for a in alternates)
    assert len({s.host for s in (chosen, *alternates)}) == 1 + len(alternates)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    world=hosts_and_candidates(),
    n=st.integers(2, 4),
    seed=st.integers(0, 2**32),
    subset=st.integers(1, 3),
)
def test_anti_affinity_spreads_the_instances_of_one_request(
    world: tuple[list[HostState], list[Candidate]], n: int, seed: int, subset: int
) -> None:
    hosts, candidates = world
    request = spec(n=n, server_group=ServerGroup("g", "anti-affinity"))
    config = SchedulerConfig(seed=seed, host_subset_size=subset)
    claimed: list[Selection] = []
    try:
        schedule = Scheduler(config).select_destinations(
            request, candidates, hosts, recording(claimed)
        )
    except NoValidHost as failure:
        assert len({s.host for s in failure.claimed}) == len(failure.claimed) < n
        assert failure.diagnosis.available == 0
        return
    chosen = [sel[0].host for sel in schedule.selections]
    assert len(set(chosen)) == n
    assert [s.host for s in claimed] == chosen

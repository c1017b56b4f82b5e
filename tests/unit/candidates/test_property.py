"""The fast solver agrees with the brute-force reference on random trees and requests."""

from __future__ import annotations

import dataclasses
import random
from unittest import mock

import numpy as np
import orjson
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

from berth.placement.candidates.index import SHARING_TRAIT, Inventory, Provider
from berth.placement.candidates.listing import ListedAnswers
from berth.placement.candidates.providers import matching_providers
from berth.placement.candidates.render import allocations_dict, render, render_json, summaries
from berth.placement.candidates.request import CandidatesRequest, ProviderFilters, RequestGroup
from berth.placement.candidates.solver import Candidates, allocation_candidates
from berth.placement.candidates.templates import listed_texts, summary_texts
from tests.unit.candidates.reference import World, reference_candidates, summaries_for

CLASSES = ["VCPU", "MEMORY_MB", "DISK_GB"]
TRAITS = ["CUSTOM_A", "CUSTOM_B", "CUSTOM_C"]
AGGS = ["agg-1", "agg-2"]

inventories = st.builds(
    lambda total, reserved, min_unit, max_unit, step, ratio, used: Inventory(
        total=total,
        reserved=min(reserved, total),
        min_unit=min_unit,
        max_unit=max_unit,
        step_size=step,
        allocation_ratio=ratio,
        used=used,
    ),
    st.integers(2, 8),
    st.sampled_from([0, 0, 0, 1, 2]),
    st.sampled_from([1, 1, 1, 2]),
    st.sampled_from([8, 8, 3, 1]),
    st.sampled_from([1, 1, 1, 2]),
    st.sampled_from([1.0, 1.0, 1.5, 0.5]),
    st.sampled_from([0, 0, 1, 3]),
)


def rarely(strategy: st.SearchStrategy, empty: object) -> st.SearchStrategy:
    """Mostly ``empty`` (four times in five): every filter at once would match nothing."""
    return st.sampled_from([False, False, False, False, True]).flatmap(
        lambda use: strategy if use else st.just(empty)
    )


@st.composite
def worlds(draw: st.DrawFn, min_inventories: int = 1) -> World:
    count = draw(st.integers(1, 6))
    providers: list[Provider] = []
    depth: dict[str, int] = {}
    for i in range(count):
        uuid = f"rp{i}"
        parents = [p for p in providers if depth[p.uuid] < 2]
        parent = draw(st.none() | st.sampled_from(parents)) if parents and i else None
        depth[uuid] = depth[parent.uuid] + 1 if parent else 0
        traits = set(draw(st.sets(st.sampled_from(TRAITS), max_size=2)))
        if draw(st.integers(0, 3)) == 0:
            traits.add(SHARING_TRAIT)
        providers.append(
            Provider(
                uuid=uuid,
                name=uuid,
                parent_uuid=parent.uuid if parent else None,
                root_uuid=parent.root_uuid if parent else uuid,
                inventories=draw(
                    st.dictionaries(
                        st.sampled_from(CLASSES), inventories, min_size=min_inventories, max_size=3
                    )
                ),
                traits=frozenset(traits),
                aggregates=frozenset(draw(st.sets(st.sampled_from(AGGS), max_size=2))),
            )
        )
    return World.build(providers, CLASSES, [*TRAITS, SHARING_TRAIT])


@st.composite
def groups(draw: st.DrawFn, suffix: str, providers: list[str], max_rcs: int) -> RequestGroup:
    rcs = draw(
        st.lists(
            st.sampled_from(CLASSES), unique=True, min_size=0 if suffix else 1, max_size=max_rcs
        )
    )
    any_of = st.frozensets(st.sampled_from(TRAITS), min_size=1, max_size=2)
    return RequestGroup(
        suffix=suffix,
        resources={rc: draw(st.integers(1, 2)) for rc in rcs},
        required=draw(rarely(st.lists(any_of, max_size=2).map(tuple), ())),
        forbidden=draw(rarely(st.frozensets(st.sampled_from(TRAITS), max_size=1), frozenset())),
        member_of=draw(
            rarely(
                st.lists(st.frozensets(st.sampled_from(AGGS), min_size=1), max_size=1).map(tuple),
                (),
            )
        ),
        forbidden_aggs=draw(rarely(st.frozensets(st.sampled_from(AGGS), max_size=1), frozenset())),
        in_tree=draw(rarely(st.sampled_from(providers), None)),
    )


@st.composite
def cases(draw: st.DrawFn) -> tuple[World, CandidatesRequest]:
    snap = draw(worlds())
    uuids = list(snap.providers)
    have_unnamed = draw(st.booleans())
    n_suffixed = draw(st.integers(0 if have_unnamed else 1, 3))
    found = [draw(groups("", uuids, 2))] if have_unnamed else []
    found += [draw(groups(f"_{i}", uuids, 2)) for i in range(n_suffixed)]
    resourceless = {g.suffix for g in found if not g.resources}
    same_subtree: list[frozenset[str]] = []
    suffixes = [g.suffix for g in found if g.suffix]
    if resourceless or (len(suffixes) > 1 and draw(st.booleans())):
        same_subtree.append(frozenset(suffixes))
    if all(not g.resources for g in found):
        found[0] = RequestGroup(found[0].suffix, {"VCPU": 1})
    return snap, CandidatesRequest(
        groups=tuple(found),
        version=draw(st.sampled_from([(1, 39), (1, 28)])),
        group_policy=draw(st.sampled_from(["none", "isolate"])),
        root_required=draw(rarely(st.frozensets(st.sampled_from(TRAITS), max_size=1), frozenset())),
        root_forbidden=draw(
            rarely(st.frozensets(st.sampled_from(TRAITS), max_size=1), frozenset())
        ),
        same_subtree=tuple(same_subtree),
    )


def _solve(
    snap: World, req: CandidatesRequest, limit: int | None = None, slice_roots: int = 64
) -> Candidates:
    if limit is not None:
        req = dataclasses.replace(req, limit=limit)
    return allocation_candidates(
        snap.index, req, randomize=False, rng=random.Random(0), slice_roots=slice_roots
    )


def _summarised(snap: World, result: Candidates) -> set[str]:
    return {snap.index.uuids[row] for row in result.summaries.tolist()}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_solver_matches_reference(case: tuple[World, CandidatesRequest]) -> None:
    snap, req = case
    result = _solve(snap, req)
    keys = [a.key() for a in result.allocation_requests]
    expected, summaries = reference_candidates(snap, req)
    # Steer the search towards requests with answers, and with several groups.
    target(float(len(expected)), label="candidates")
    target(float(len(req.groups) * bool(expected)), label="groups answered")
    assert len(keys) == len(set(keys)), "duplicate allocation requests"
    assert set(keys) == expected
    assert _summarised(snap, result) == summaries


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 3))
def test_limit_returns_a_subset_of_the_right_size(
    case: tuple[World, CandidatesRequest], limit: int
) -> None:
    snap, req = case
    everything = {a.key() for a in _solve(snap, req).allocation_requests}
    # One root per slice at first: the search crosses slices whenever there are several trees.
    limited = _solve(snap, req, limit, slice_roots=1)
    keys = {a.key() for a in limited.allocation_requests}
    assert keys <= everything
    assert len(limited.allocation_requests) == min(limit, len(everything))
    assert _summarised(snap, limited) == summaries_for(snap, req, keys)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 4), st.integers(1, 3))
def test_slices_keep_the_answers_and_their_order(
    case: tuple[World, CandidatesRequest], limit: int, slice_roots: int
) -> None:
    """A limited search over slices of trees returns exactly the first answers of the search
    over the whole index, in the same order."""
    snap, req = case
    everything = [a.key() for a in _solve(snap, req).allocation_requests]
    limited = _solve(snap, req, limit, slice_roots=slice_roots)
    assert [a.key() for a in limited.allocation_requests] == everything[:limit]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from([None, 1, 2]))
def test_combinations_agree_with_the_depth_first_search(
    case: tuple[World, CandidatesRequest], limit: int | None
) -> None:
    """Where no two slots compete for a provider the solver lists combinations; the
    depth-first search, made to run everywhere, gives the same answers in the same order."""
    snap, req = case

    def written(result: Candidates) -> list[object]:
        # In order, down to the order of providers and classes the body will show.
        return [
            (
                [(rp, list(amounts.items())) for rp, amounts in a.resources.items()],
                list(a.mappings.items()),
            )
            for a in result.allocation_requests
        ]

    listed = written(_solve(snap, req, limit))
    with mock.patch("berth.placement.candidates.solver._compete", return_value=True):
        searched = written(_solve(snap, req, limit))
    assert listed == searched


@st.composite
def provider_filters(draw: st.DrawFn, snap: World) -> ProviderFilters:
    uuids = list(snap.providers)
    return ProviderFilters(
        name=draw(rarely(st.sampled_from(uuids), None)),
        in_tree=draw(rarely(st.sampled_from(uuids), None)),
        resources={
            rc: draw(st.integers(1, 3))
            for rc in draw(st.lists(st.sampled_from(CLASSES), unique=True, max_size=2))
        },
        required=draw(
            rarely(
                st.lists(st.frozensets(st.sampled_from(TRAITS), min_size=1), max_size=2).map(tuple),
                (),
            )
        ),
        forbidden=draw(rarely(st.frozensets(st.sampled_from(TRAITS), max_size=1), frozenset())),
        member_of=draw(
            rarely(
                st.lists(st.frozensets(st.sampled_from(AGGS), min_size=1), max_size=2).map(tuple),
                (),
            )
        ),
        forbidden_aggs=draw(rarely(st.frozensets(st.sampled_from(AGGS), max_size=1), frozenset())),
    )


def _brute_force_filter(snap: World, f: ProviderFilters) -> list[str]:
    """Each provider by itself against each filter, read straight off the API reference."""
    found = []
    for p in snap.providers.values():
        if f.name is not None and p.name != f.name:
            continue
        if f.in_tree is not None and p.root_uuid != snap.providers[f.in_tree].root_uuid:
            continue
        if any(not (any_of & p.traits) for any_of in f.required) or f.forbidden & p.traits:
            continue
        if any(not (any_of & p.aggregates) for any_of in f.member_of):
            continue
        if f.forbidden_aggs & p.aggregates:
            continue
        enough = True
        for rc, n in f.resources.items():
            inv = p.inventories.get(rc)
            limit = (inv.total - inv.reserved) * inv.allocation_ratio if inv else 0
            if (
                inv is None
                or inv.used + n > limit
                or not inv.min_unit <= n <= inv.max_unit
                or n % inv.step_size
            ):
                enough = False
        if enough:
            found.append(p.uuid)
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_provider_filter_matches_brute_force(data: st.DataObject) -> None:
    snap = data.draw(worlds())
    filters = data.draw(provider_filters(snap))
    matched = [snap.index.uuids[row] for row in matching_providers(snap.index, filters)]
    assert matched == _brute_force_filter(snap, filters)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 3), st.integers(0, 2**32))
def test_randomized_answers_are_the_same_set_and_respect_limit(
    case: tuple[World, CandidatesRequest], limit: int, seed: int
) -> None:
    snap, req = case
    everything = {a.key() for a in _solve(snap, req).allocation_requests}
    shuffled = allocation_candidates(snap.index, req, randomize=True, rng=random.Random(seed))
    assert {a.key() for a in shuffled.allocation_requests} == everything
    limited = allocation_candidates(
        snap.index,
        dataclasses.replace(req, limit=limit),
        randomize=True,
        rng=random.Random(seed),
        slice_roots=1,
    )
    keys = {a.key() for a in limited.allocation_requests}
    assert keys <= everything
    assert len(keys) == min(limit, len(everything))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(min_inventories=0), st.sampled_from([(1, 27), (1, 28), (1, 29), (1, 39)]), st.data())
def test_summary_texts_are_the_summaries_serialised(
    snap: World, version: tuple[int, int], data: st.DataObject
) -> None:
    """The templated summaries are byte for byte what orjson makes of the summaries as data,
    in row order, keyed by uuid or not."""
    index = snap.index
    picked = data.draw(st.sets(st.sampled_from(range(len(index.uuids))), min_size=1))
    rows = np.asarray(sorted(picked), np.int64)
    expected = summaries(index, rows, frozenset(), version)
    keyed = "{" + ",".join(summary_texts(index, rows, version, True)) + "}"
    assert keyed.encode() == orjson.dumps(expected)
    plain = summary_texts(index, rows, version, False)
    assert [t.encode() for t in plain] == [orjson.dumps(s) for s in expected.values()]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases(),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([(1, 10), (1, 12), (1, 33), (1, 34), (1, 39)]),
)
def test_listed_answers_render_as_the_searched_ones(
    case: tuple[World, CandidatesRequest], limit: int | None, version: tuple[int, int]
) -> None:
    """Answers kept as the rows they chose (a table, and written from templates) make the same
    body, byte for byte, as the same answers found as objects by the depth-first search."""
    snap, req = case
    listed = _solve(snap, req, limit)
    with mock.patch("berth.placement.candidates.solver._compete", return_value=True):
        searched = _solve(snap, req, limit)
    assert isinstance(searched.answers, tuple)
    target(float(isinstance(listed.answers, ListedAnswers)), label="listed")
    target(float(len(searched.answers)), label="answers")
    body = orjson.dumps(render(listed, snap.index, version))
    assert body == orjson.dumps(render(searched, snap.index, version))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cases(),
    st.sampled_from([None, 1, 2]),
    st.sampled_from([(1, 27), (1, 29), (1, 33), (1, 34), (1, 39)]),
    st.booleans(),
)
def test_the_body_in_one_piece_is_the_answer_as_data_serialised(
    case: tuple[World, CandidatesRequest], limit: int | None, version: tuple[int, int], twice: bool
) -> None:
    """From 1.27 the body joined from texts (summaries kept per row, answers from templates or
    objects) is byte for byte what orjson makes of the answer built as dicts, and what
    ``render`` gives; asked twice, the kept summaries give it again."""
    snap, req = case
    found = _solve(snap, req, limit)
    data = {
        "allocation_requests": [allocations_dict(a, version) for a in found.allocation_requests],
        "provider_summaries": summaries(
            snap.index, found.summaries, found.requested_classes, version
        ),
    }
    for _ in range(2 if twice else 1):
        body = render_json(found, snap.index, version)
        assert body == orjson.dumps(data)
        assert body == orjson.dumps(render(found, snap.index, version))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.sampled_from([None, 2]), st.sampled_from([(1, 12), (1, 34), (1, 39)]))
def test_listed_answers_written_as_arrays_of_bytes_are_the_formatted_ones(
    case: tuple[World, CandidatesRequest], limit: int | None, version: tuple[int, int]
) -> None:
    """Where every uuid has one length, long runs of answers of one shape are written column by
    column into an array of bytes (here every run); the text is the one %-formatting makes
    (the way for short runs and uuids of any length)."""
    snap, req = case
    found = _solve(snap, req, limit)
    if not isinstance(found.answers, ListedAnswers):
        return
    assert snap.index.uuid_bytes_matrix() is not None
    chosen = found.answers.chosen
    target(float(len(chosen) and np.mean([len(set(row)) for row in chosen.tolist()])))
    with mock.patch("berth.placement.candidates.templates._ARRAY_RUN", 1):
        texts = listed_texts(snap.index, found.answers, version)
    with mock.patch.object(type(snap.index), "uuid_bytes_matrix", return_value=None):
        assert texts == listed_texts(snap.index, found.answers, version)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.integers(1, 3), st.integers(1, 3))
def test_the_search_takes_over_the_slices_a_table_would_not_fit(
    case: tuple[World, CandidatesRequest], limit: int, slice_roots: int
) -> None:
    """Past the combinations a table may hold under a limit, the search runs over the slices
    already seen and the rest: the same answers in the same order."""
    snap, req = case
    with mock.patch("berth.placement.candidates.solver._COMBINATIONS_PER_ANSWER", 0):
        searched = _solve(snap, req, limit, slice_roots=slice_roots)
    listed = _solve(snap, req, limit, slice_roots=slice_roots)
    body = orjson.dumps(render(listed, snap.index, (1, 39)))
    assert body == orjson.dumps(render(searched, snap.index, (1, 39)))

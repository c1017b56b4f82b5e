"""Placement's answer as candidates, and the free capacity the summaries tell."""

from __future__ import annotations

import logging
from typing import Any

import orjson
import pytest

from berth.compute.scheduler import candidates
from berth.compute.scheduler.candidates import KnownCandidates, ProviderUsage, read_answer


def summary(root: str, traits: tuple[str, ...] = (), **resources: tuple[int, int]) -> Any:
    return {
        "resources": {rc: {"capacity": c, "used": u} for rc, (c, u) in resources.items()},
        "traits": list(traits),
        "root_provider_uuid": root,
    }


ANSWER: dict[str, Any] = {
    "allocation_requests": [
        {
            "allocations": {
                "cn1": {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
                "pf1": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}},
                "pool": {"resources": {"DISK_GB": 10}},
            },
            "mappings": {"": ["cn1", "pool"], "g": ["pf1"]},
        },
        {"allocations": {"cn2": {"resources": {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 10}}}},
        # Two compute nodes in one request: not something this scheduler asked for.
        {"allocations": {"cn1": {"resources": {"VCPU": 1}}, "cn2": {"resources": {"VCPU": 1}}}},
    ],
    "provider_summaries": {
        "cn1": summary("cn1", VCPU=(8, 7), MEMORY_MB=(4096, 0)),
        "pf1": summary("cn1", NET_BW_EGR_KILOBIT_PER_SEC=(100, 0)),
        "pool": summary("pool", ("MISC_SHARES_VIA_AGGREGATE",), DISK_GB=(1000, 0)),
        "cn2": summary("cn2", VCPU=(8, 0), MEMORY_MB=(4096, 0), DISK_GB=(100, 0)),
    },
}


def test_each_candidate_belongs_to_its_compute_node() -> None:
    answer = read_answer(orjson.dumps(ANSWER), "1.36")
    assert answer.requests == 3  # the one on two compute nodes is left out of the candidates
    first, second = answer.candidates
    assert first.root == "cn1"
    assert first.host_amounts == {"VCPU": 2, "MEMORY_MB": 512, "NET_BW_EGR_KILOBIT_PER_SEC": 10}
    assert first.mappings == {"": ("cn1", "pool"), "g": ("pf1",)}
    assert first.version == "1.36"
    assert second.root == "cn2"
    assert second.host_amount("DISK_GB") == 10
    assert second.mappings == {}


def test_a_candidate_claims_the_allocation_request_placement_gave() -> None:
    first, second, _ = ANSWER["allocation_requests"]
    read = read_answer(orjson.dumps(ANSWER), "1.36").candidates
    assert read[0].allocation_request == first
    assert read[1].allocation_request == {**second, "mappings": {}}
    # Before 1.34 an allocation request has no mappings.
    [old] = read_answer(
        orjson.dumps({**ANSWER, "allocation_requests": [second]}), "1.29"
    ).candidates
    assert old.allocation_request == second


def test_a_body_that_is_no_answer_is_refused() -> None:
    with pytest.raises(ValueError):
        read_answer(b'{"allocation_requests": [{"allocations": []}]}', "1.36")
    with pytest.raises(ValueError):
        read_answer(b"<html>", "1.36")


def test_provider_usage_fits_and_consumes() -> None:
    first, second = read_answer(orjson.dumps(ANSWER), "1.36").candidates
    usage = ProviderUsage(read_answer(orjson.dumps(ANSWER), "1.36").summaries)
    assert usage.free("cn1", "VCPU") == 1
    # Placement answered both because they fitted: until an instance of the request takes
    # from their providers, they still do (cn1's summary is not looked at).
    assert usage.fits(first) and usage.fits(second)
    usage.consume(second)
    assert usage.free("cn2", "VCPU") == 6
    assert usage.fits(first)  # nothing taken from cn1, pf1 or the pool
    for _ in range(3):
        usage.consume(second)
    assert not usage.fits(second)  # 8 VCPU taken, and DISK_GB down to 60
    # Once the pool is taken from, cn1's candidate is checked against every summary.
    usage.consume(first)
    assert not usage.fits(first)  # cn1 had one VCPU left
    assert ProviderUsage().fits(first)  # without summaries nothing is limited here


def test_known_candidates_are_those_proposed_again_as_they_were() -> None:
    known = KnownCandidates()
    first = known.read(orjson.dumps(ANSWER), "1.36")
    assert first.candidates == read_answer(orjson.dumps(ANSWER), "1.36").candidates
    assert first.requests == 3
    # Usage moved (as it does between two answers to one query): the same candidates.
    summaries = {**ANSWER["provider_summaries"], "cn2": summary("cn2", VCPU=(8, 6))}
    again = known.read(orjson.dumps({**ANSWER, "provider_summaries": summaries}), "1.36")
    assert [a is b for a, b in zip(again.candidates, first.candidates, strict=True)] == [True] * 2
    assert again.summaries["cn2"].free() == {"VCPU": 2}
    # The pool no longer shares: its candidate lands on two compute nodes and is left out.
    summaries = {**ANSWER["provider_summaries"], "pool": summary("pool", DISK_GB=(1000, 0))}
    changed = known.read(orjson.dumps({**ANSWER, "provider_summaries": summaries}), "1.36")
    assert [c.root for c in changed.candidates] == ["cn2"]
    assert changed.candidates[0] is first.candidates[1]
    # Another microversion: the candidates are made again (a claim writes them at theirs).
    other = known.read(orjson.dumps(ANSWER), "1.37")
    assert [c.version for c in other.candidates] == ["1.37", "1.37"]
    assert not any(a is b for a, b in zip(other.candidates, first.candidates, strict=True))


def test_an_answer_proposing_the_same_requests_to_the_byte_is_not_read_request_by_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answer = {**ANSWER, "allocation_requests": ANSWER["allocation_requests"][:2]}
    known = KnownCandidates()
    first = known.read(orjson.dumps(answer), "1.36")
    # Only the usage moved: the candidates are the last answer's, and no request is looked at.
    monkeypatch.setattr(candidates, "_reading", _not_called)
    summaries = {**ANSWER["provider_summaries"], "cn2": summary("cn2", VCPU=(8, 6))}
    again = known.read(orjson.dumps({**answer, "provider_summaries": summaries}), "1.36")
    assert [a is b for a, b in zip(again.candidates, first.candidates, strict=True)] == [True] * 2
    assert again.candidates is not first.candidates and again.requests == 2
    assert again.summaries["cn2"].free() == {"VCPU": 2}
    monkeypatch.undo()
    # One request fewer: the others are the ones known.
    fewer = known.read(
        orjson.dumps({**answer, "allocation_requests": [answer["allocation_requests"][1]]}), "1.36"
    )
    assert fewer.requests == 1 and fewer.candidates[0] is first.candidates[1]
    # And back: the one left out is made again.
    back = known.read(orjson.dumps(answer), "1.36")
    assert back.candidates[1] is first.candidates[1]
    assert back.candidates[0] is not first.candidates[0]
    assert back.candidates[0] == first.candidates[0]
    # The same requests to the byte, but the pool no longer shares: its candidate lands on two
    # compute nodes and is left out.
    summaries = {**ANSWER["provider_summaries"], "pool": summary("pool", DISK_GB=(1000, 0))}
    unshared = known.read(orjson.dumps({**answer, "provider_summaries": summaries}), "1.36")
    assert [c.root for c in unshared.candidates] == ["cn2"] and unshared.requests == 2


def test_an_answer_with_a_request_left_out_is_read_request_by_request_each_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    known = KnownCandidates()
    body = orjson.dumps(ANSWER)
    with caplog.at_level(logging.WARNING):
        first = known.read(body, "1.36")
        again = known.read(body, "1.36")
    assert [a is b for a, b in zip(again.candidates, first.candidates, strict=True)] == [True] * 2
    assert again.requests == first.requests == 3
    assert [r.message.startswith("allocation request on 2") for r in caplog.records] == [True] * 2


def _not_called(*args: Any) -> Any:
    raise AssertionError("the allocation requests were read one by one")

"""The solver skips the leading roots that had no anchor for the same request, until capacity
is freed."""

from __future__ import annotations

import random

from berth.placement.candidates import Inventory, Provider, ProviderIndex, allocation_candidates
from berth.placement.candidates.index import Usage
from berth.placement.candidates.request import parse_candidates_request


def _hosts(*used: int) -> ProviderIndex:
    return ProviderIndex.build(
        [
            Provider(
                uuid=f"cn{i}",
                name=f"cn{i}",
                root_uuid=f"cn{i}",
                inventories={"VCPU": Inventory(total=2, used=n)},
            )
            for i, n in enumerate(used)
        ],
        ["VCPU"],
        [],
    )


def _first(index: ProviderIndex, query: str = "VCPU:1") -> list[str]:
    req = parse_candidates_request([("resources", query), ("limit", "1")], (1, 39))
    found = allocation_candidates(index, req, randomize=False, rng=random.Random(), slice_roots=1)
    return [uuid for a in found.allocation_requests for uuid in a.resources]


def _use(index: ProviderIndex, row: int, vcpu: int) -> None:
    index.apply_usage([Usage(id=row, generation=1, modified=None, used={"VCPU": vcpu})])


def test_full_hosts_are_skipped_until_one_is_freed() -> None:
    index = _hosts(2, 2, 0, 0)
    assert _first(index) == ["cn2"]
    assert list(index.no_anchor_prefix.values()) == [2]
    # Claims only fill: the prefix holds, and the search goes on past it.
    _use(index, 2, 2)
    assert index.no_anchor_prefix
    assert _first(index) == ["cn3"]
    assert list(index.no_anchor_prefix.values()) == [3]
    # Freeing capacity on a skipped host forgets every prefix.
    _use(index, 0, 1)
    assert not index.no_anchor_prefix
    assert _first(index) == ["cn0"]


def test_a_prefix_belongs_to_its_request() -> None:
    index = _hosts(1, 0)
    assert _first(index, "VCPU:2") == ["cn1"]
    assert _first(index, "VCPU:1") == ["cn0"]


def test_nothing_left_is_remembered_as_well() -> None:
    index = _hosts(2, 2)
    assert _first(index) == []
    assert list(index.no_anchor_prefix.values()) == [2]
    _use(index, 1, 0)
    assert _first(index) == ["cn1"]


def test_a_provider_change_forgets_the_prefixes() -> None:
    index = _hosts(2, 0)
    assert _first(index) == ["cn1"]
    index.apply([Provider(uuid="cn0", name="cn0", root_uuid="cn0", id=0,
                          inventories={"VCPU": Inventory(total=4, used=2)})])  # fmt: skip
    assert not index.no_anchor_prefix
    assert _first(index) == ["cn0"]

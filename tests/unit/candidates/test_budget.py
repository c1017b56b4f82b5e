"""The solver looks at its work budget as it searches and stops once it is spent, on each of its
paths: the search where slots compete, the combinations where they do not, and the table of
every combination when there is no limit."""

from __future__ import annotations

import itertools
import random

import pytest

from berth.placement.candidates import Inventory, Provider, ProviderIndex, allocation_candidates
from berth.placement.candidates import budget as budgets
from berth.placement.candidates.budget import Budget, SearchTooCostly
from berth.placement.candidates.request import parse_candidates_request

CLASSES = ["VCPU", "NET_A", "NET_B", "NET_C", "NET_D", "NET_E"]


def _host_with_nics(nics: int) -> ProviderIndex:
    """One host with ``nics`` children, each with every NET_* class."""
    host = Provider(uuid="cn", name="cn", root_uuid="cn", inventories={"VCPU": Inventory(8)})
    children = [
        Provider(
            uuid=f"nic{i}",
            name=f"nic{i}",
            parent_uuid="cn",
            root_uuid="cn",
            inventories={rc: Inventory(total=100) for rc in CLASSES[1:]},
        )
        for i in range(nics)
    ]
    return ProviderIndex.build([host, *children], CLASSES, [])


def _counting(limit: int) -> Budget:
    """A budget of ``limit`` looks at the clock: each look is a second."""
    ticks = itertools.count()
    return Budget(limit, clock=lambda: float(next(ticks)))


def _run(
    index: ProviderIndex,
    groups: list[str],
    budget: Budget,
    limit: str | None,
    randomize: bool = False,
) -> int:
    query = [("resources", "VCPU:1"), ("group_policy", "none")]
    query += [(f"resources{k}", wanted) for k, wanted in enumerate(groups, 1)]
    query += [("limit", limit)] if limit else []
    request = parse_candidates_request(query, (1, 39))
    found = allocation_candidates(
        index, request, randomize=randomize, rng=random.Random(0), budget=budget
    )
    return len(found.allocation_requests)


# Slots that compete (one class: the search) and slots that do not (a class each: combinations
# one by one when randomised; without randomising they are listed as a table, a slice at a time,
# and at most 16 times the limit).
SHAPES = {
    "search": (["NET_A:1"] * 5, False),
    "combinations": (["NET_A:1", "NET_B:1", "NET_C:1", "NET_D:1", "NET_E:1"], True),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_search_that_passes_its_budget_is_stopped(shape: str) -> None:
    index = _host_with_nics(8)
    # 8**5 answers: the search needs many checks of the clock before it is through.
    groups, randomize = SHAPES[shape]
    with pytest.raises(SearchTooCostly, match="work budget"):
        _run(index, groups, _counting(5), "40000", randomize)
    assert _run(index, groups, _counting(10**6), "40000", randomize) == 8**5


def test_a_table_past_what_a_query_may_list_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(budgets, "MAX_LISTED", 8**5 - 1)
    index = _host_with_nics(8)
    with pytest.raises(SearchTooCostly, match="combinations to list"):
        _run(index, SHAPES["combinations"][0], _counting(10**6), limit=None)

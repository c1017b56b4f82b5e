"""Why an allocation-candidates request found nothing (Berth's extension, not upstream's).

The same parsed request as ``GET /allocation_candidates``, asked again in pieces: the whole
request (``limit=1``), then each request group alone with the request's root rules. A group
that cannot be met alone is the place to look; for the first such group (in the order the
client named them) the nearest providers are listed: for each of its resource classes, the
providers with the most of it free, so an operator sees how far off the best one is.

Per group, besides whether it is met alone:
- per resource class, the amount asked and how many providers could take it by themselves;
- the required traits (``in:A,B`` for an any-of set) that no provider has at all.
A request whose groups are each met alone fails only together (same tree, ``same_subtree``,
``group_policy=isolate``): ``first_unmet_group`` is then None and ``found`` False.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import numpy as np

from berth.placement.candidates.budget import UNLIMITED, Budget
from berth.placement.candidates.index import NO_ROW, ProviderIndex
from berth.placement.candidates.request import CandidatesRequest, RequestGroup
from berth.placement.candidates.solver import allocation_candidates
from berth.placement.exceptions import InvalidInput

NEAREST = 5


@dataclass(frozen=True, slots=True)
class ResourceFit:
    requested: int
    # Providers that could take the amount by themselves (for a suffixed group, the only way).
    providers_with_room: int


@dataclass(frozen=True, slots=True)
class GroupExplanation:
    suffix: str
    met_alone: bool
    resources: dict[str, ResourceFit]
    missing_traits: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NearProvider:
    uuid: str
    name: str
    root_provider_uuid: str
    resource_class: str
    requested: int
    free: int
    capacity: int
    used: int
    max_unit: int


@dataclass(frozen=True, slots=True)
class Explanation:
    found: bool
    groups: tuple[GroupExplanation, ...]
    first_unmet_group: str | None
    nearest_providers: tuple[NearProvider, ...]


def explain(
    index: ProviderIndex, request: CandidatesRequest, budget: Budget = UNLIMITED
) -> Explanation:
    found = _any(index, dataclasses.replace(request, limit=1), budget)
    groups = tuple(_group(index, request, group, budget) for group in request.groups)
    first = next((g for g in groups if not g.met_alone), None)
    nearest: tuple[NearProvider, ...] = ()
    if first is not None:
        nearest = _nearest(index, first)
    return Explanation(found, groups, None if first is None else first.suffix, nearest)


def _group(
    index: ProviderIndex, request: CandidatesRequest, group: RequestGroup, budget: Budget
) -> GroupExplanation:
    missing = tuple(_name(any_of) for any_of in group.required if not _anyone_has(index, any_of))
    fits = {
        rc: ResourceFit(amount, int(index.fitting(rc, amount).sum()))
        for rc, amount in sorted(group.resources.items())
    }
    if group.resources:
        alone = CandidatesRequest(
            groups=(group,),
            version=request.version,
            limit=1,
            root_required=request.root_required,
            root_forbidden=request.root_forbidden,
        )
        met = not missing and _any(index, alone, budget)
    else:
        # A group without resources (one of a same_subtree) holds wherever its traits do.
        met = not missing and bool(
            (index.with_traits(group.required) & ~index.with_any_trait(group.forbidden)).any()
        )
    return GroupExplanation(group.suffix, met, fits, missing)


def _any(index: ProviderIndex, request: CandidatesRequest, budget: Budget) -> bool:
    try:
        found = allocation_candidates(
            index, request, randomize=False, rng=random.Random(0), budget=budget
        )
    except InvalidInput:
        # An unknown name: nothing can have it (missing_traits says which trait).
        return False
    return bool(found.allocation_requests)


def _anyone_has(index: ProviderIndex, any_of: frozenset[str]) -> bool:
    return bool(any_of & index.traits) and bool(index.with_traits([any_of]).any())


def _name(any_of: frozenset[str]) -> str:
    names = sorted(any_of)
    return names[0] if len(names) == 1 else "in:" + ",".join(names)


def _nearest(index: ProviderIndex, group: GroupExplanation) -> tuple[NearProvider, ...]:
    """For the group's classes no provider has room for (all its classes when each has some
    room, the group failing on its traits or together), the providers with the most free."""
    short = [rc for rc, fit in group.resources.items() if not fit.providers_with_room]
    near: list[NearProvider] = []
    for rc in short or list(group.resources):
        column = index.columns.get(rc)
        if column is None:
            continue
        live = (column.row != NO_ROW) & index.alive[np.maximum(column.row, 0)]
        entries = np.flatnonzero(live)
        free = column.capacity[entries] - column.used[entries]
        for entry in entries[np.argsort(-free, kind="stable")][:NEAREST].tolist():
            row = int(column.row[entry])
            near.append(
                NearProvider(
                    uuid=index.uuids[row],
                    name=index.names[row],
                    root_provider_uuid=index.uuids[int(index.root[row])],
                    resource_class=rc,
                    requested=group.resources[rc].requested,
                    free=int(column.capacity[entry] - column.used[entry]),
                    capacity=column.exact_capacity(entry),
                    used=int(column.used[entry]),
                    max_unit=int(column.max_unit[entry]),
                )
            )
    return tuple(near)

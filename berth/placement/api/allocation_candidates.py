"""GET /allocation_candidates (1.10): where a request of resources and traits could be placed;
GET /allocation_candidates/explain (Berth's extension): why such a request found nothing."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from starlette.responses import Response

from berth.common import collector
from berth.placement import candidates
from berth.placement.api.request import PlacementRequest, dumps
from berth.placement.candidates import CandidatesRequest
from berth.placement.candidates.budget import Budget
from berth.placement.candidates.explain import Explanation, explain


@functools.lru_cache(maxsize=1024)
def _parsed(query: tuple[tuple[str, str], ...], version: tuple[int, int]) -> CandidatesRequest:
    """A query parsed once: schedulers send the same few queries over and over, and the parsed
    request is immutable. Refusals are not remembered (they raise anew)."""
    return candidates.parse_candidates_request(list(query), version)


def list_allocation_candidates(req: PlacementRequest) -> Response:
    """GET /allocation_candidates?resources=VCPU:1,MEMORY_MB:512&...

    {"allocation_requests": [{"allocations": {RP: {"resources": {"VCPU": 1}}},
                              "mappings": {"": [RP]}}],
     "provider_summaries": {RP: {"resources": {"VCPU": {"capacity": 8, "used": 0}},
                                 "traits": [...], "parent_provider_uuid": null,
                                 "root_provider_uuid": RP}}}
    """
    req.require_version((1, 10))
    req.authorize("placement:allocation_candidates:list")
    version = (req.version.major, req.version.minor)
    request = _parsed(tuple(req.query_items), version)
    settings = req.service.settings
    cap = settings.max_allocation_candidates
    if cap > 0 and (request.limit is None or request.limit > cap):
        request = dataclasses.replace(request, limit=cap)
    with req.service.index.current() as index, collector.paused():
        found = candidates.allocation_candidates(
            index,
            request,
            randomize=settings.randomize_allocation_candidates,
            rng=req.service.rng,
            budget=Budget(settings.allocation_candidates_budget),
        )
        # Serialised here, so the answer's objects are freed before the collector runs again.
        body = candidates.render_json(found, index, version) or dumps(
            candidates.render(found, index, version)
        )
        del found
    # Candidates are an answer about now, so they are last modified now.
    return req.respond(body)


def explain_allocation_candidates(req: PlacementRequest) -> Response:
    """GET /allocation_candidates/explain?<the same query> (Berth's extension)::

    {"allocation_candidates_found": false,
     "first_unmet_group": "_PORT1",              (null when each group is met alone)
     "request_groups": [{"suffix": "", "met_alone": true,
                         "resources": {"VCPU": {"requested": 1, "providers_with_room": 2}},
                         "missing_traits": []}, ...],
     "nearest_providers": [{"uuid": RP, "name": "cn1:pf1", "root_provider_uuid": RP,
                            "resource_class": "NET_BW_EGR_KILOBIT_PER_SEC", "requested": 20000,
                            "free": 10000, "capacity": 10000, "used": 0, "max_unit": 10000}]}
    """
    req.require_version((1, 10))
    # Who may ask for candidates may ask why there are none: upstream's rule, not a new one.
    req.authorize("placement:allocation_candidates:list")
    version = (req.version.major, req.version.minor)
    request = _parsed(tuple(req.query_items), version)
    budget = Budget(req.service.settings.allocation_candidates_budget)
    with req.service.index.current() as index:
        found = explain(index, request, budget)
    return req.respond(_transform_explanation(found))


def _transform_explanation(found: Explanation) -> dict[str, Any]:
    return {
        "allocation_candidates_found": found.found,
        "first_unmet_group": found.first_unmet_group,
        "request_groups": [
            {
                "suffix": group.suffix,
                "met_alone": group.met_alone,
                "resources": {
                    rc: {"requested": fit.requested, "providers_with_room": fit.providers_with_room}
                    for rc, fit in group.resources.items()
                },
                "missing_traits": list(group.missing_traits),
            }
            for group in found.groups
        ],
        "nearest_providers": [dataclasses.asdict(near) for near in found.nearest_providers],
    }

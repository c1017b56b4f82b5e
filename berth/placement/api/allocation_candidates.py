"""GET /allocation_candidates (1.10): where a request of resources and traits could be placed."""

from __future__ import annotations

from starlette.responses import Response

from berth.placement import candidates
from berth.placement.api.request import PlacementRequest


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
    request = candidates.parse_candidates_request(list(req.query_items), version)
    with req.read() as conn:
        snapshot = candidates.load_snapshot(conn)
    settings = req.service.settings
    found = candidates.allocation_candidates(
        snapshot,
        request,
        randomize=settings.randomize_allocation_candidates,
        rng=req.service.rng,
    )
    # Candidates are an answer about now, so they are last modified now.
    return req.respond(candidates.render(found, snapshot, version))

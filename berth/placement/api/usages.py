"""Usages: GET /resource_providers/{uuid}/usages and GET /usages (1.9)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.placement.api.request import PlacementRequest
from berth.placement.api.schemas import usage as schema
from berth.placement.store import providers, usages


def provider_usages(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/usages

    {"resource_provider_generation": 4, "usages": {"VCPU": 2, "DISK_GB": 0}}
    """
    req.authorize("placement:resource_providers:usages")
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        used = usages.for_provider(conn, provider)
    # Usage is a question about now, so it is last modified now.
    return req.respond({"resource_provider_generation": provider.generation, "usages": used})


def total_usages(req: PlacementRequest) -> Response:
    """GET /usages?project_id=P[&user_id=U][&consumer_type=T]

    Before 1.38: {"usages": {"VCPU": 4}}
    From 1.38:   {"usages": {"INSTANCE": {"consumer_count": 2, "VCPU": 4}, "unknown": {...}}}
    """
    req.require_version((1, 9))
    project_id = next((v for k, v in req.query_items if k == "project_id"), None)
    req.authorize("placement:usages", target={"project_id": project_id})
    by_type = req.version.matches((1, 38))
    query = req.query(schema.QUERY_V1_38 if by_type else schema.QUERY_V1_9)
    with req.read() as conn:
        if by_type:
            grouped = usages.for_project_by_type(
                conn, query["project_id"], query.get("user_id"), query.get("consumer_type")
            )
            body: dict[str, Any] = {
                "usages": {
                    g.consumer_type: {**g.usages, "consumer_count": g.consumer_count}
                    for g in grouped
                }
            }
        else:
            body = {"usages": usages.for_project(conn, query["project_id"], query.get("user_id"))}
    return req.respond(body)

"""A provider's aggregates: /resource_providers/{uuid}/aggregates (from 1.1)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.placement.api.request import PlacementRequest
from berth.placement.api.schemas import aggregate as schema
from berth.placement.store import aggregates, providers

# From 1.19 the generation travels in both directions.
_WITH_GENERATION = (1, 19)


def _serialize(req: PlacementRequest, uuids: list[str], generation: int) -> dict[str, Any]:
    """{"aggregates": ["<uuid>", ...], "resource_provider_generation": 3}   (generation 1.19)"""
    body: dict[str, Any] = {"aggregates": uuids}
    if req.version.matches(_WITH_GENERATION):
        body["resource_provider_generation"] = generation
    return body


def get_aggregates(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/aggregates

    Membership has no timestamp of its own, so Last-Modified is the time of the answer.
    """
    req.require_version((1, 1))
    req.authorize("placement:resource_providers:aggregates:list")
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        uuids = aggregates.of_provider(conn, provider.id)
    return req.respond(_serialize(req, uuids, provider.generation))


def set_aggregates(req: PlacementRequest) -> Response:
    """PUT /resource_providers/{uuid}/aggregates

    Before 1.19: ["<uuid>", ...]. From 1.19:
    {"aggregates": ["<uuid>", ...], "resource_provider_generation": 2}, which must be current
    and moves on.
    """
    req.require_version((1, 1))
    req.authorize("placement:resource_providers:aggregates:update")
    with_generation = req.version.matches(_WITH_GENERATION)
    body_schema = schema.PUT_V1_19 if with_generation else schema.PUT_V1_1
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        data = req.json_body(body_schema)
        if with_generation:
            providers.require_generation(provider, data["resource_provider_generation"])
            uuids = data["aggregates"]
        else:
            uuids = data
        generation = aggregates.replace(conn, provider, uuids, bump=with_generation)
    return req.respond(_serialize(req, uuids, generation))

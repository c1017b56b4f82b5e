"""The Placement API's OpenAPI description: its route table, and the request schemas, replies
and query parameters of the newest microversion (older ones differ; the handlers pick theirs
per request)."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription, Body
from berth.placement import microversion
from berth.placement.api.routes import ROUTES
from berth.placement.api.schemas import (
    aggregate,
    allocation,
    inventory,
    reshaper,
    resource_class,
    resource_provider,
    trait,
)
from berth.placement.api.schemas.replies import QUERIES, REPLIES, REQUIRED_QUERIES

ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "errors": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "status": {"type": "integer"},
                    "title": {"type": "string"},
                    "detail": {"type": "string"},
                    "request_id": {"type": "string"},
                    "code": {"type": "string"},
                },
                "required": ["status", "title", "detail", "request_id"],
            },
        }
    },
    "required": ["errors"],
}

_PROVIDER = "/resource_providers/{uuid}"

DESCRIPTION = ApiDescription(
    title="Placement",
    version=f"1.0 to {microversion.VERSIONS[-1]}",
    routes=ROUTES,
    error=ERROR,
    replies=REPLIES,
    queries=QUERIES,
    required_queries=REQUIRED_QUERIES,
    bodies={
        ("POST", "/resource_providers"): Body(resource_provider.POST_V1_14),
        ("PUT", _PROVIDER): Body(resource_provider.PUT_V1_14),
        ("POST", f"{_PROVIDER}/inventories"): Body(inventory.NEW_INVENTORY),
        ("PUT", f"{_PROVIDER}/inventories"): Body(inventory.INVENTORIES),
        ("PUT", f"{_PROVIDER}/inventories/{{resource_class}}"): Body(inventory.INVENTORY),
        ("PUT", f"{_PROVIDER}/aggregates"): Body(aggregate.PUT_V1_19),
        ("PUT", f"{_PROVIDER}/traits"): Body(trait.PUT_PROVIDER_TRAITS),
        ("POST", "/allocations"): Body(allocation.POST_BY_VERSION[0][1]),
        ("PUT", "/allocations/{consumer_uuid}"): Body(allocation.PUT_BY_VERSION[0][1]),
        ("POST", "/reshaper"): Body(reshaper.BY_VERSION[0][1]),
        ("POST", "/resource_classes"): Body(resource_class.CUSTOM_CLASS),
        # From 1.7 the name in the path is all there is.
        ("PUT", "/resource_classes/{name}"): None,
        ("PUT", "/traits/{name}"): None,
    },
    description="Request bodies, replies and query parameters are those of the newest "
    "microversion; send 'OpenStack-API-Version: placement latest' to be held to them.",
)

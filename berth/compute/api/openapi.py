"""The Compute API's OpenAPI description: its route table; request bodies are any JSON object
until their schemas are declared."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription
from berth.compute.api import microversion
from berth.compute.api.routes import ROUTES

# {"itemNotFound": {"code": 404, "message": "..."}}: one key, which names the kind of refusal.
ERROR: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": {
        "type": "object",
        "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        "required": ["code", "message"],
    },
}

DESCRIPTION = ApiDescription(
    title="Compute",
    version=f"{microversion.MIN} to {microversion.MAX}",
    routes=ROUTES,
    error=ERROR,
    bodies={
        # The tag is in the path.
        ("PUT", "/v2.1/servers/{server_id}/tags/{tag}"): None,
    },
    anonymous=frozenset({"/", "/v2.1"}),
)

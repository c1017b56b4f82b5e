"""The Networking API's OpenAPI description: its route table, its request schemas, and what its
main operations answer."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription, Body
from berth.network.api.routes import ROUTES
from berth.network.api.schemas.bodies import BODIES
from berth.network.api.schemas.replies import QUERIES, REPLIES

# {"NeutronError": {"type": "NetworkNotFound", "message": "...", "detail": ""}}
ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "NeutronError": {
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "message": {"type": "string"},
                "detail": {"type": "string"},
            },
            "required": ["type", "message", "detail"],
        }
    },
    "required": ["NeutronError"],
}

DESCRIPTION = ApiDescription(
    title="Networking",
    version="2.0",
    routes=ROUTES,
    error=ERROR,
    replies=REPLIES,
    queries=QUERIES,
    bodies={
        **{route: Body(schema) for route, schema in BODIES.items()},
        # The host to activate is in the path.
        ("PUT", "/v2.0/ports/{port_id}/bindings/{host}/activate"): None,
    },
)

"""The Networking API's OpenAPI description: its route table; request bodies are any JSON
object until their schemas are declared."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription
from berth.network.api.routes import ROUTES

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
    bodies={
        # The host to activate is in the path.
        ("PUT", "/v2.0/ports/{port_id}/bindings/{host}/activate"): None,
    },
)

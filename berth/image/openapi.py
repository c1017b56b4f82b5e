"""The Image API's OpenAPI description: its route table, its request schemas (a JSON patch for
updates), what its main operations answer, and image data as a byte stream."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription, Body
from berth.image.api import ROUTES
from berth.image.schemas import BODIES, QUERIES, REPLIES

# {"message": "No image found with ID ...", "code": "404 Not Found", "title": "Not Found"}
ERROR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "code": {"type": "string"},
        "title": {"type": "string"},
    },
    "required": ["message", "code", "title"],
}

DESCRIPTION = ApiDescription(
    title="Image",
    version="2",
    routes=ROUTES,
    error=ERROR,
    replies=REPLIES,
    queries=QUERIES,
    bodies={
        **BODIES,
        ("PUT", "/v2/images/{image_id}/file"): Body(
            {"type": "string", "format": "binary"}, "application/octet-stream"
        ),
    },
    anonymous=frozenset({"/", "/versions"}),
)

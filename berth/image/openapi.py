"""The Image API's OpenAPI description: its route table, a JSON patch for updates, and image
data as a byte stream."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription, Body
from berth.image.api import PATCH_MEDIA_TYPE, ROUTES

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

# An image update: a list of JSON patch operations on its properties.
PATCH: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "replace", "remove"]},
            "path": {"type": "string"},
            "value": {},
        },
        "required": ["op", "path"],
    },
}

DESCRIPTION = ApiDescription(
    title="Image",
    version="2",
    routes=ROUTES,
    error=ERROR,
    bodies={
        ("PATCH", "/v2/images/{image_id}"): Body(PATCH, PATCH_MEDIA_TYPE),
        ("PUT", "/v2/images/{image_id}/file"): Body(
            {"type": "string", "format": "binary"}, "application/octet-stream"
        ),
    },
    anonymous=frozenset({"/", "/versions"}),
)

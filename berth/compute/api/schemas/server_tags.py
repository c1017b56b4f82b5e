"""PUT /servers/{id}/tags: ``{"tags": [...]}`` replaces them all (a tag in the path needs no
body)."""

from __future__ import annotations

from typing import Any

from berth.compute.server_tags import MAX_LENGTH, MAX_TAGS

# Which characters a tag may hold (no "," or "/") is the domain's to say.
TAG: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_LENGTH}

REPLACE: dict[str, Any] = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": TAG, "maxItems": MAX_TAGS}},
    "required": ["tags"],
    "additionalProperties": False,
}

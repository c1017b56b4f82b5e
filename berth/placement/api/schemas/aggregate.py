"""Schemas for a provider's aggregates."""

from __future__ import annotations

from typing import Any

_AGGREGATES: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "format": "uuid"},
    "uniqueItems": True,
}

# Before 1.19 the body is the bare list.
PUT_V1_1 = _AGGREGATES

# 1.19: the list travels with the provider generation it was read at.
PUT_V1_19: dict[str, Any] = {
    "type": "object",
    "properties": {
        "aggregates": _AGGREGATES,
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["aggregates", "resource_provider_generation"],
    "additionalProperties": False,
}

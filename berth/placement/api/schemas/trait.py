"""Schemas for traits and a provider's traits."""

from __future__ import annotations

from typing import Any

TRAIT: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 255}
CUSTOM_TRAIT: dict[str, Any] = {**TRAIT, "pattern": "^CUSTOM_[A-Z0-9_]+$"}

PUT_PROVIDER_TRAITS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "traits": {"type": "array", "items": TRAIT},
        "resource_provider_generation": {"type": "integer"},
    },
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}

LIST_TRAITS: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "associated": {"type": "string"}},
    "additionalProperties": False,
}

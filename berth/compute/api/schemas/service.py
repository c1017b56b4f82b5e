"""PUT /os-services/{id} (2.53, by uuid) and the older PUT /os-services/{action} (by host and
binary): one route, whose body differs by microversion."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string

_REASON = string(255, 1)

# Before 2.53: the action in the path says which keys matter; the handler checks them.
LEGACY_ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "host": string(255, 1),
        "binary": string(255, 1),
        "disabled_reason": _REASON,
        "forced_down": {"type": "boolean"},
    },
    "required": ["host", "binary"],
}

UPDATE_V2_53: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"enum": ["enabled", "disabled"]},
        "disabled_reason": _REASON,
        "forced_down": {"type": "boolean"},
    },
    "additionalProperties": False,
}

UPDATE_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((2, 53), UPDATE_V2_53),
    ((2, 1), LEGACY_ACTION),
]

"""POST /os-server-external-events: the events other services send about servers."""

from __future__ import annotations

from typing import Any

# The event names of 2.1; 2.51 adds volume-extended (later ones are above what Berth serves).
NAMES = ("network-changed", "network-vif-plugged", "network-vif-unplugged", "network-vif-deleted")
NAMES_2_51 = (*NAMES, "volume-extended")
STATUSES = ("failed", "completed", "in-progress")


def events(names: tuple[str, ...]) -> dict[str, Any]:
    """``{"events": [{"name", "server_uuid", "status", "tag"}, ...]}`` with these names."""
    return {
        "type": "object",
        "properties": {
            "events": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"enum": list(names)},
                        "server_uuid": {"type": "string", "format": "uuid"},
                        "status": {"enum": list(STATUSES)},
                        "tag": {"type": "string", "maxLength": 255},
                    },
                    "required": ["name", "server_uuid"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["events"],
        "additionalProperties": False,
    }


# Newest first, as the Compute table keeps them.
BY_VERSION = [((2, 51), events(NAMES_2_51)), ((2, 1), events(NAMES))]

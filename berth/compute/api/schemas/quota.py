"""PUT /os-quota-sets/{project} and /os-quota-class-sets/{class}: limits from -1 (unlimited)
to what the database column holds, as integers or strings of them; which resources there are
(they differ by microversion) is the handler's to say."""

from __future__ import annotations

from typing import Any

from berth.compute.quotas import MAX_LIMIT, UNLIMITED

_WORDS = f"an integer from {UNLIMITED} (unlimited) to {MAX_LIMIT}"
LIMIT: dict[str, Any] = {
    "description": _WORDS,
    "anyOf": [
        {"type": "integer", "minimum": UNLIMITED, "maximum": MAX_LIMIT},
        {"description": _WORDS, "type": "string", "pattern": "^-?[0-9]+$"},
    ],
}


# "true", "0", "yes"...: which strings are booleans is the handler's to say.
_FLAG: dict[str, Any] = {"type": ["boolean", "string"]}


def _update(key: str, *flags: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            key: {
                "type": "object",
                "properties": dict.fromkeys(flags, _FLAG),
                "additionalProperties": LIMIT,
            }
        },
        "required": [key],
        "additionalProperties": False,
    }


QUOTA_SET = _update("quota_set", "force")
QUOTA_CLASS_SET = _update("quota_class_set")

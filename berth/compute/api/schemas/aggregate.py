"""POST /os-aggregates, PUT /os-aggregates/{id} and their actions."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string

# Leading or trailing whitespace is the domain's to refuse (with its own words).
_NAME = string(255, 1)
_ZONE = string(255, 1, nullable=True)

CREATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "aggregate": {
            "type": "object",
            "properties": {"name": _NAME, "availability_zone": _ZONE},
            "required": ["name"],
            "additionalProperties": False,
        }
    },
    "required": ["aggregate"],
    "additionalProperties": False,
}

UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "aggregate": {
            "type": "object",
            "properties": {"name": _NAME, "availability_zone": _ZONE},
            "minProperties": 1,
            "additionalProperties": False,
        }
    },
    "required": ["aggregate"],
    "additionalProperties": False,
}

_HOST: dict[str, Any] = {
    "type": "object",
    "properties": {"host": _NAME},
    "required": ["host"],
    "additionalProperties": False,
}

ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {
        "add_host": _HOST,
        "remove_host": _HOST,
        "set_metadata": {
            "type": "object",
            "properties": {
                "metadata": {
                    "type": "object",
                    "propertyNames": {"minLength": 1, "maxLength": 255},
                    # null removes the key.
                    "additionalProperties": string(255, nullable=True),
                }
            },
            "required": ["metadata"],
            "additionalProperties": False,
        },
    },
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
}

"""A server's metadata: ``PUT`` and ``POST /servers/{id}/metadata`` take ``{"metadata": {...}}``,
``PUT .../metadata/{key}`` takes ``{"meta": {key: value}}``."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string
from berth.compute.server_metadata import VALUE_LENGTH

# Keys as the domain's ``KEY`` holds them.
METADATA: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": "^[a-zA-Z0-9\\-_:. ]{1,255}$"},
    "additionalProperties": string(VALUE_LENGTH),
}

ALL: dict[str, Any] = {
    "type": "object",
    "properties": {"metadata": METADATA},
    "required": ["metadata"],
    "additionalProperties": False,
}

ONE: dict[str, Any] = {
    "type": "object",
    "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
    "required": ["meta"],
    "additionalProperties": False,
}

"""The image proxy's metadata (before 2.36): ``PUT`` and ``POST /images/{id}/metadata`` take
``{"metadata": {...}}``, ``PUT .../metadata/{key}`` takes ``{"meta": {key: value}}``; keys of 1
to 255 characters and string values of at most 255, as Nova's."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string

METADATA: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"minLength": 1, "maxLength": 255},
    "additionalProperties": string(255),
}

ALL: dict[str, Any] = {
    "type": "object",
    "properties": {"metadata": METADATA},
    "required": ["metadata"],
}

ONE: dict[str, Any] = {
    "type": "object",
    "properties": {"meta": {**METADATA, "minProperties": 1, "maxProperties": 1}},
    "required": ["meta"],
}

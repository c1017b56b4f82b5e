"""Schemas for a consumer's allocations (PUT /allocations/{uuid}) and several consumers' at once
(POST /allocations), one per microversion, each built from the one before."""

from __future__ import annotations

import copy
from typing import Any

# Upstream's patterns, which clients see in error messages.
UUID_PATTERN = "^[0-9a-fA-F-]{36}$"
RESOURCE_CLASS_PATTERN = "^[A-Z0-9_]+$"
CONSUMER_TYPE_PATTERN = "^[A-Z0-9_]+$"
GROUP_SUFFIX_PATTERN = "[a-zA-Z0-9_-]{1,64}"

_EXTERNAL_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 255}

# An amount of each resource class; zero is not an allocation.
_RESOURCES: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {RESOURCE_CLASS_PATTERN: {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}

# Before 1.12: a list of {"resource_provider": {"uuid": ...}, "resources": {...}}.
PUT_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "resource_provider": {
                        "type": "object",
                        "properties": {"uuid": {"type": "string", "format": "uuid"}},
                        "additionalProperties": False,
                        "required": ["uuid"],
                    },
                    "resources": _RESOURCES,
                },
                "required": ["resource_provider", "resources"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["allocations"],
    "additionalProperties": False,
}

# 1.8: the consumer's project and user are required.
PUT_V1_8 = copy.deepcopy(PUT_V1_0)
PUT_V1_8["properties"]["project_id"] = _EXTERNAL_ID
PUT_V1_8["properties"]["user_id"] = _EXTERNAL_ID
PUT_V1_8["required"].extend(["project_id", "user_id"])

# 1.12: allocations keyed by provider uuid, the shape GET answers with (its generation ignored).
PUT_V1_12: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {
                UUID_PATTERN: {
                    "type": "object",
                    "properties": {"generation": {"type": "integer"}, "resources": _RESOURCES},
                    "required": ["resources"],
                    "additionalProperties": False,
                }
            },
            "additionalProperties": False,
        },
        "project_id": _EXTERNAL_ID,
        "user_id": _EXTERNAL_ID,
    },
    "required": ["allocations", "project_id", "user_id"],
    "additionalProperties": False,
}

# One consumer's entry in POST /allocations: empty allocations remove the consumer's.
DELETABLE = copy.deepcopy(PUT_V1_12)
DELETABLE["properties"]["allocations"]["minProperties"] = 0


def _post(entry: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "minProperties": 1,
        "patternProperties": {UUID_PATTERN: entry},
        "additionalProperties": False,
    }


# 1.13: POST /allocations, several consumers keyed by uuid.
POST_V1_13 = _post(DELETABLE)

# 1.28: the consumer generation the client last saw (null: a new consumer) is required, and PUT
# may empty a consumer's allocations.
PUT_V1_28 = copy.deepcopy(DELETABLE)
PUT_V1_28["properties"]["consumer_generation"] = {"type": ["integer", "null"]}
PUT_V1_28["required"].append("consumer_generation")
POST_V1_28 = _post(PUT_V1_28)

# 1.34: the request group mappings of an allocation candidate may be sent back (not stored).
PUT_V1_34 = copy.deepcopy(PUT_V1_28)
PUT_V1_34["properties"]["mappings"] = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        GROUP_SUFFIX_PATTERN: {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "format": "uuid"},
        }
    },
}
POST_V1_34 = _post(PUT_V1_34)

# 1.38: every consumer has a type.
PUT_V1_38 = copy.deepcopy(PUT_V1_34)
PUT_V1_38["properties"]["consumer_type"] = {
    "type": "string",
    "pattern": CONSUMER_TYPE_PATTERN,
    "minLength": 1,
    "maxLength": 255,
}
PUT_V1_38["required"].append("consumer_type")
POST_V1_38 = _post(PUT_V1_38)

# Newest first: the first whose version the request matches applies.
PUT_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((1, 38), PUT_V1_38),
    ((1, 34), PUT_V1_34),
    ((1, 28), PUT_V1_28),
    ((1, 12), PUT_V1_12),
    ((1, 8), PUT_V1_8),
    ((1, 0), PUT_V1_0),
]
POST_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((1, 38), POST_V1_38),
    ((1, 34), POST_V1_34),
    ((1, 28), POST_V1_28),
    ((1, 13), POST_V1_13),
]

"""Schemas for /resource_providers/{uuid}/inventories (unchanged across microversions)."""

from __future__ import annotations

import copy
from typing import Any

from berth.placement.api.schemas.allocation import RESOURCE_CLASS_PATTERN
from berth.placement.capacity import MAX_FLOAT, MAX_INT


def _bounded(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "maximum": MAX_INT, "minimum": minimum}


# PUT /resource_providers/{uuid}/inventories/{rc}: one class, at the generation the client saw.
INVENTORY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": _bounded(1),
        "reserved": _bounded(0),
        "min_unit": _bounded(1),
        "max_unit": _bounded(1),
        "step_size": _bounded(1),
        "allocation_ratio": {"type": "number", "maximum": MAX_FLOAT},
    },
    "required": ["total", "resource_provider_generation"],
    "additionalProperties": False,
}

# POST /resource_providers/{uuid}/inventories: a new class, no generation.
NEW_INVENTORY = copy.deepcopy(INVENTORY)
NEW_INVENTORY["properties"]["resource_class"] = {
    "type": "string",
    "pattern": RESOURCE_CLASS_PATTERN,
}
NEW_INVENTORY["required"] = ["total", "resource_class"]

# One class within PUT /resource_providers/{uuid}/inventories (and the reshaper).
INVENTORY_RECORD = copy.deepcopy(INVENTORY)
INVENTORY_RECORD["required"] = ["total"]

# PUT /resource_providers/{uuid}/inventories: every class at once.
INVENTORIES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {RESOURCE_CLASS_PATTERN: INVENTORY_RECORD},
            # A key that is not a class name would skip the record's schema.
            "additionalProperties": False,
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}

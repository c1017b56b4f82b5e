"""Schemas for POST /reshaper (1.30), one per microversion, each built from the one before."""

from __future__ import annotations

import copy
from typing import Any

from berth.placement.api.schemas import allocation

MAX_INT = 2**31 - 1
# The largest value a single-precision SQL float column holds.
SQL_FLOAT_MAX = 3.40282e38


def _bounded(minimum: int) -> dict[str, Any]:
    return {"type": "integer", "maximum": MAX_INT, "minimum": minimum}


# One resource class's inventory, as PUT /resource_providers/{uuid}/inventories takes it.
INVENTORY_RECORD: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "total": _bounded(1),
        "reserved": _bounded(0),
        "min_unit": _bounded(1),
        "max_unit": _bounded(1),
        "step_size": _bounded(1),
        "allocation_ratio": {"type": "number", "maximum": SQL_FLOAT_MAX},
    },
    "required": ["total"],
    "additionalProperties": False,
}

PROVIDER_INVENTORIES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "resource_provider_generation": {"type": "integer"},
        "inventories": {
            "type": "object",
            "patternProperties": {allocation.RESOURCE_CLASS_PATTERN: INVENTORY_RECORD},
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}


def _reshape(allocations: dict[str, Any]) -> dict[str, Any]:
    # No allocations at all is fine: nothing may be allocated from the inventory that moves.
    allocations = copy.deepcopy(allocations)
    allocations["minProperties"] = 0
    return {
        "type": "object",
        "properties": {
            "inventories": {
                "type": "object",
                "patternProperties": {allocation.UUID_PATTERN: PROVIDER_INVENTORIES},
                # Without any inventory there is nothing to reshape.
                "minProperties": 1,
                "additionalProperties": False,
            },
            "allocations": allocations,
        },
        "required": ["inventories", "allocations"],
        "additionalProperties": False,
    }


POST_V1_30 = _reshape(allocation.POST_V1_28)
# 1.34: allocations may carry request group mappings; 1.38: consumer types.
POST_V1_34 = _reshape(allocation.POST_V1_34)
POST_V1_38 = _reshape(allocation.POST_V1_38)

BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((1, 38), POST_V1_38),
    ((1, 34), POST_V1_34),
    ((1, 30), POST_V1_30),
]

# What an inventory record's omitted fields are.
INVENTORY_DEFAULTS: dict[str, Any] = {
    "reserved": 0,
    "min_unit": 1,
    "max_unit": MAX_INT,
    "step_size": 1,
    "allocation_ratio": 1.0,
}

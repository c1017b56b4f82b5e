"""Schemas for POST /reshaper (1.30), one per microversion, each built from the one before."""

from __future__ import annotations

import copy
from typing import Any

from berth.placement.api.schemas import allocation, inventory

# A provider's whole new inventory, as PUT /resource_providers/{uuid}/inventories takes it.
PROVIDER_INVENTORIES = inventory.INVENTORIES


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

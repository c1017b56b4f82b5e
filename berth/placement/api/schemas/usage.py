"""Schemas for GET /usages: 1.9, then 1.38 with consumer_type."""

from __future__ import annotations

import copy
from typing import Any

_ID = {"type": "string", "minLength": 1, "maxLength": 255}

QUERY_V1_9: dict[str, Any] = {
    "type": "object",
    "properties": {"project_id": _ID, "user_id": _ID},
    "required": ["project_id"],
    "additionalProperties": False,
}

QUERY_V1_38 = copy.deepcopy(QUERY_V1_9)
QUERY_V1_38["properties"]["consumer_type"] = {
    "type": "string",
    "pattern": "^[A-Z0-9_]+$|^all$|^unknown$",
    "minLength": 1,
    "maxLength": 255,
}

"""A project's quota limits: from -1 (unlimited) to what the column holds; which resources
there are is the domain's to say."""

from __future__ import annotations

from typing import Any

from berth.common.validation import integer
from berth.network.api.schemas.common import BOOLEAN
from berth.network.quotas import MAX_LIMIT, UNLIMITED

UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quota": {
            "type": "object",
            "properties": {"check_limit": BOOLEAN, "force": BOOLEAN},
            "additionalProperties": integer(UNLIMITED, MAX_LIMIT),
        }
    },
    "required": ["quota"],
}

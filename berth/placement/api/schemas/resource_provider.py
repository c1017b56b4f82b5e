"""Schemas for resource provider bodies (the list's query string is
``berth.placement.candidates.qsschema.providers_schema``)."""

from __future__ import annotations

import copy
from typing import Any

_NAME = {"type": "string", "maxLength": 200}
_UUID = {"type": "string", "format": "uuid"}

POST_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": _NAME, "uuid": _UUID},
    "required": ["name"],
    "additionalProperties": False,
}

# 1.14: a provider may name its parent.
POST_V1_14 = copy.deepcopy(POST_V1_0)
POST_V1_14["properties"]["parent_provider_uuid"] = {"anyOf": [_UUID, {"type": "null"}]}

# A provider's uuid never changes.
PUT_V1_0 = copy.deepcopy(POST_V1_0)
del PUT_V1_0["properties"]["uuid"]
PUT_V1_14 = copy.deepcopy(POST_V1_14)
del PUT_V1_14["properties"]["uuid"]

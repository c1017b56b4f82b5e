"""Schemas for resource provider bodies and the provider list's query string."""

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

LIST_V1_0: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "uuid": _UUID},
    "additionalProperties": False,
}
# 1.3: member_of; 1.4: resources; 1.14: in_tree; 1.18: required. Their values are parsed later.
LIST_V1_3 = copy.deepcopy(LIST_V1_0)
LIST_V1_3["properties"]["member_of"] = {"type": "string"}
LIST_V1_4 = copy.deepcopy(LIST_V1_3)
LIST_V1_4["properties"]["resources"] = {"type": "string"}
LIST_V1_14 = copy.deepcopy(LIST_V1_4)
LIST_V1_14["properties"]["in_tree"] = _UUID
LIST_V1_18 = copy.deepcopy(LIST_V1_14)
LIST_V1_18["properties"]["required"] = {"type": "string"}

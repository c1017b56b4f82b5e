"""POST /os-server-groups: one of ``policies`` before 2.64, ``policy`` and ``rules`` from it;
the soft policies from 2.15."""

from __future__ import annotations

import copy
from typing import Any

from berth.common.validation import MAX_INT, string
from berth.compute.api import microversion

_HARD = ["affinity", "anti-affinity"]
_SOFT = ["soft-affinity", "soft-anti-affinity"]


def _legacy(policies: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "server_group": {
                "type": "object",
                "properties": {
                    "name": string(255, 1),
                    "policies": {
                        "type": "array",
                        "items": {"enum": policies},
                        "minItems": 1,
                        "maxItems": 1,
                    },
                },
                "required": ["name", "policies"],
                "additionalProperties": False,
            }
        },
        "required": ["server_group"],
        "additionalProperties": False,
    }


CREATE_V2_1 = _legacy(_HARD)
CREATE_V2_15 = _legacy(_HARD + _SOFT)

CREATE_V2_64 = copy.deepcopy(CREATE_V2_15)
_GROUP = CREATE_V2_64["properties"]["server_group"]
del _GROUP["properties"]["policies"]
_GROUP["properties"]["policy"] = {"enum": _HARD + _SOFT}
_GROUP["properties"]["rules"] = {
    "type": "object",
    "properties": {
        "max_server_per_host": {
            "description": "a positive integer",
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": MAX_INT},
                {"description": "a positive integer", "type": "string", "pattern": "^[0-9]+$"},
            ],
        }
    },
    "additionalProperties": False,
}
_GROUP["required"] = ["name", "policy"]

CREATE_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    (microversion.SERVER_GROUP_POLICY_RULES, CREATE_V2_64),
    ((2, 15), CREATE_V2_15),
    ((2, 1), CREATE_V2_1),
]

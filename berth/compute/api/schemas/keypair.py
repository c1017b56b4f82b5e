"""POST /os-keypairs: 2.2 adds ``type``, 2.10 ``user_id`` (an admin's, for another user)."""

from __future__ import annotations

import copy
from typing import Any

from berth.common.validation import string
from berth.compute.keypairs import TYPES

CREATE_V2_1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "keypair": {
            "type": "object",
            "properties": {
                # Which characters a name may hold is the domain's to say.
                "name": string(255, 1),
                # A key's length is checked against its column by the domain (65,535).
                "public_key": {"type": "string"},
            },
            "required": ["name"],
            "additionalProperties": False,
        }
    },
    "required": ["keypair"],
    "additionalProperties": False,
}

CREATE_V2_2 = copy.deepcopy(CREATE_V2_1)
CREATE_V2_2["properties"]["keypair"]["properties"]["type"] = {"enum": list(TYPES)}

CREATE_V2_10 = copy.deepcopy(CREATE_V2_2)
CREATE_V2_10["properties"]["keypair"]["properties"]["user_id"] = string(255, 1)

CREATE_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((2, 10), CREATE_V2_10),
    ((2, 2), CREATE_V2_2),
    ((2, 1), CREATE_V2_1),
]

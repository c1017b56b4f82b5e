"""POST /servers/{id}/os-interface: a port, or a network and perhaps an address; 2.49 adds a
``tag``."""

from __future__ import annotations

import copy
from typing import Any

from berth.common.validation import string

_UUID = string(36, nullable=True)

ATTACH_V2_1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "interfaceAttachment": {
            "type": "object",
            "properties": {
                "port_id": _UUID,
                "net_id": _UUID,
                "fixed_ips": {
                    "type": "array",
                    "maxItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {"ip_address": string(64)},
                        "required": ["ip_address"],
                        "additionalProperties": False,
                    },
                },
            },
            "additionalProperties": False,
        }
    },
    "additionalProperties": False,
}

ATTACH_V2_49 = copy.deepcopy(ATTACH_V2_1)
ATTACH_V2_49["properties"]["interfaceAttachment"]["properties"]["tag"] = string(
    60, 1, nullable=True
)

ATTACH_BY_VERSION: list[tuple[tuple[int, int], dict[str, Any]]] = [
    ((2, 49), ATTACH_V2_49),
    ((2, 1), ATTACH_V2_1),
]

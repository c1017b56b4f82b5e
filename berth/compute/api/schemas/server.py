"""POST /servers: 2.19 adds ``description``, 2.37 requires ``networks``, 2.52 adds ``tags``,
2.57 removes ``personality``, 2.63 adds ``trusted_image_certificates``.

The shape only: which keys a server may have and the lengths its columns hold. The values that
need parsing (counts, networks, block devices, addresses) are checked by
``berth.compute.server_input``, and what needs the databases by ``berth.compute.servers``.
"""

from __future__ import annotations

import copy
from typing import Any

from berth.compute.api import microversion
from berth.compute.server_input import MAX_COUNT

_NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 255}
# Checked and parsed by berth.compute.server_input.
_PARSED: dict[str, Any] = {}
# What the guest is given: parsed by berth.compute.guest_input.
_GUEST = ("user_data", "config_drive", "personality")
# How the guest's disk is partitioned (null: the image's choice).
DISK_CONFIG: dict[str, Any] = {"enum": ["AUTO", "MANUAL", None]}

CREATE_V2_1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": _NAME,
                "flavorRef": _PARSED,
                "imageRef": _PARSED,
                "networks": _PARSED,
                "availability_zone": _PARSED,
                "min_count": _PARSED,
                "max_count": _PARSED,
                "metadata": _PARSED,
                "key_name": _PARSED,
                "adminPass": _PARSED,
                "block_device_mapping_v2": _PARSED,
                "accessIPv4": _PARSED,
                "accessIPv6": _PARSED,
                "security_groups": _PARSED,
                "return_reservation_id": _PARSED,
                **dict.fromkeys(_GUEST, _PARSED),
                "OS-DCF:diskConfig": DISK_CONFIG,
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        "os:scheduler_hints": _PARSED,
        "OS-SCH-HNT:scheduler_hints": _PARSED,
    },
    "required": ["server"],
}

CREATE_V2_19 = copy.deepcopy(CREATE_V2_1)
CREATE_V2_19["properties"]["server"]["properties"]["description"] = {
    "type": ["string", "null"],
    "maxLength": 255,
}

CREATE_V2_37 = copy.deepcopy(CREATE_V2_19)
CREATE_V2_37["properties"]["server"]["required"].append("networks")

CREATE_V2_52 = copy.deepcopy(CREATE_V2_37)
CREATE_V2_52["properties"]["server"]["properties"]["tags"] = {"type": "array"}

CREATE_V2_57 = copy.deepcopy(CREATE_V2_52)
del CREATE_V2_57["properties"]["server"]["properties"]["personality"]

# Taken as Nova takes them (create and rebuild); berth.compute.guest_input refuses a list, as
# Berth verifies no image signatures.
TRUSTED_CERTIFICATES: dict[str, Any] = {
    "type": ["array", "null"],
    "minItems": 1,
    "maxItems": 50,
    "uniqueItems": True,
    "items": {"type": "string", "minLength": 1},
}

CREATE_V2_63 = copy.deepcopy(CREATE_V2_57)
CREATE_V2_63["properties"]["server"]["properties"]["trusted_image_certificates"] = (
    TRUSTED_CERTIFICATES
)

CREATE_BY_VERSION = [
    (microversion.TRUSTED_CERTS_IN_SERVER, CREATE_V2_63),
    (microversion.PERSONALITY_GONE, CREATE_V2_57),
    (microversion.TAGS_AT_CREATE, CREATE_V2_52),
    (microversion.NETWORKS_AUTO_NONE, CREATE_V2_37),
    (microversion.SERVER_DESCRIPTION, CREATE_V2_19),
    ((2, 1), CREATE_V2_1),
]


def _what_if(create: dict[str, Any]) -> dict[str, Any]:
    """POST /os-berth-what-if: a create's body, and how many servers (default: max_count)."""
    body = copy.deepcopy(create)
    body["properties"]["count"] = {"type": "integer", "minimum": 1, "maximum": MAX_COUNT}
    return body


WHAT_IF_BY_VERSION = [(version, _what_if(create)) for version, create in CREATE_BY_VERSION]

# PUT /servers/{id}: 2.19 adds ``description``.
UPDATE_V2_1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {
            "type": "object",
            "properties": {
                "name": _NAME,
                # Addresses are parsed by berth.compute.server_input.
                "accessIPv4": {"type": ["string", "null"], "maxLength": 64},
                "accessIPv6": {"type": ["string", "null"], "maxLength": 64},
                "OS-DCF:diskConfig": DISK_CONFIG,
            },
            "additionalProperties": False,
        }
    },
    "required": ["server"],
    "additionalProperties": False,
}

UPDATE_V2_19 = copy.deepcopy(UPDATE_V2_1)
UPDATE_V2_19["properties"]["server"]["properties"]["description"] = {
    "type": ["string", "null"],
    "maxLength": 255,
}

UPDATE_BY_VERSION = [
    (microversion.SERVER_DESCRIPTION, UPDATE_V2_19),
    ((2, 1), UPDATE_V2_1),
]

"""POST /flavors: 2.55 adds ``description``."""

from __future__ import annotations

import copy
from typing import Any

from berth.compute.flavors import EPHEMERAL, IS_PUBLIC, MAX_DESCRIPTION, MAX_INT

# An amount as a number or a string of digits (clients send both), as an integer column holds.
_AMOUNT: dict[str, Any] = {
    "type": ["integer", "string"],
    "pattern": "^[0-9]{1,10}$",
    "minimum": 0,
    "maximum": MAX_INT,
}
_POSITIVE = {**_AMOUNT, "minimum": 1}
_BOOLEAN: dict[str, Any] = {"type": ["boolean", "string"]}

CREATE_V2_1: dict[str, Any] = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 255},
                "id": {"type": ["string", "number", "null"], "maxLength": 255},
                "ram": _POSITIVE,
                "vcpus": _POSITIVE,
                "disk": _AMOUNT,
                EPHEMERAL: _AMOUNT,
                # "" is no swap.
                "swap": {**_AMOUNT, "pattern": "^[0-9]{0,10}$"},
                "rxtx_factor": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "maximum": 3.40282e38,
                },
                IS_PUBLIC: _BOOLEAN,
            },
            "required": ["name", "ram", "vcpus", "disk"],
            "additionalProperties": False,
        }
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

CREATE_V2_55 = copy.deepcopy(CREATE_V2_1)
CREATE_V2_55["properties"]["flavor"]["properties"]["description"] = {
    "type": ["string", "null"],
    "maxLength": MAX_DESCRIPTION,
}

CREATE_BY_VERSION = [((2, 55), CREATE_V2_55), ((2, 1), CREATE_V2_1)]

# PUT /flavors/{id} (2.55): the description, the one thing that changes.
UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "flavor": {
            "type": "object",
            "properties": {
                "description": CREATE_V2_55["properties"]["flavor"]["properties"]["description"]
            },
            "required": ["description"],
            "additionalProperties": False,
        }
    },
    "required": ["flavor"],
    "additionalProperties": False,
}

# Extra specs: keys of letters, digits and "-_:. /"; values strings (numbers and booleans are
# taken and kept as their strings) of at most 255 characters.
_SPEC_VALUE: dict[str, Any] = {
    "anyOf": [{"type": "string", "maxLength": 255}, {"type": ["number", "boolean"]}]
}
EXTRA_SPECS: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": "^[a-zA-Z0-9\\-_:. /]{1,255}$"},
    "additionalProperties": _SPEC_VALUE,
}
CREATE_EXTRA_SPECS: dict[str, Any] = {
    "type": "object",
    "properties": {"extra_specs": EXTRA_SPECS},
    "required": ["extra_specs"],
    "additionalProperties": False,
}
# PUT .../os-extra_specs/{key}: {key: value}, the key of the path (the handler compares them).
UPDATE_EXTRA_SPEC: dict[str, Any] = {**EXTRA_SPECS, "minProperties": 1, "maxProperties": 1}

_TENANT: dict[str, Any] = {
    "type": "object",
    "properties": {"tenant": {"type": "string", "minLength": 1, "maxLength": 255}},
    "required": ["tenant"],
    "additionalProperties": False,
}
# POST /flavors/{id}/action: access to a private flavor.
ACTION: dict[str, Any] = {
    "type": "object",
    "properties": {"addTenantAccess": _TENANT, "removeTenantAccess": _TENANT},
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
}

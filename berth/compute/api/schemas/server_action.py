"""POST /servers/{server_id}/action: one key, the action, and its argument.

The arguments are checked here where their shape is fixed; an action Berth does not have
passes the schema and is refused by name by the handler, and unshelve's argument is left to its
handler, which says the microversion (2.77) that brings one.
"""

from __future__ import annotations

from typing import Any

from berth.compute.api.schemas.security_group import SERVER_GROUP

# What clients send to an action that takes nothing: null or {} (Nova takes both).
_NOTHING: dict[str, Any] = {"anyOf": [{"type": "null"}, {"type": "object", "maxProperties": 0}]}
_NO_ARGUMENT = (
    "confirmResize", "revertResize", "os-stop", "os-start", "pause", "unpause", "suspend",
    "resume", "lock", "unlock", "shelve", "shelveOffload", "injectNetworkInfo", "restore",
    "forceDelete", "unrescue",
)  # fmt: skip
_PASSWORD: dict[str, Any] = {"type": "string", "maxLength": 255}

_ADDRESS: dict[str, Any] = {"type": "string", "maxLength": 64}

_IMAGE_NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 255}
_IMAGE_METADATA: dict[str, Any] = {
    "type": "object",
    "patternProperties": {"^[a-zA-Z0-9-_:. /]{1,255}$": {"type": "string", "maxLength": 255}},
    "additionalProperties": False,
}

ACTION: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "properties": {
        "reboot": {
            "type": "object",
            "properties": {"type": {"enum": ["SOFT", "soft", "Soft", "HARD", "hard", "Hard"]}},
            "required": ["type"],
            "additionalProperties": False,
        },
        "resize": {
            "type": "object",
            "properties": {
                "flavorRef": {"type": ["string", "integer"], "minLength": 1, "maxLength": 255},
                "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL"]},
            },
            "required": ["flavorRef"],
            "additionalProperties": False,
        },
        "rescue": {
            "type": ["object", "null"],
            "properties": {
                "adminPass": _PASSWORD,
                "rescue_image_ref": {"type": "string", "format": "uuid"},
            },
            "additionalProperties": False,
        },
        "changePassword": {
            "type": "object",
            "properties": {"adminPass": _PASSWORD},
            "required": ["adminPass"],
            "additionalProperties": False,
        },
        "os-getConsoleOutput": {
            "type": "object",
            # -1 (or null) is the whole log.
            "properties": {
                "length": {
                    "anyOf": [
                        {"type": "integer", "minimum": -1},
                        {"type": "string", "pattern": "^-?[0-9]+$"},
                        {"type": "null"},
                    ]
                }
            },
            "additionalProperties": False,
        },
        # Nova's: a name, and image properties of 1 to 255 characters each way.
        "createImage": {
            "type": "object",
            "properties": {"name": _IMAGE_NAME, "metadata": _IMAGE_METADATA},
            "required": ["name"],
            "additionalProperties": False,
        },
        "createBackup": {
            "type": "object",
            "properties": {
                "name": _IMAGE_NAME,
                "backup_type": {"type": "string"},
                "rotation": {
                    "type": ["integer", "string"],
                    "pattern": "^[0-9]+$",
                    "minimum": 0,
                },
                "metadata": _IMAGE_METADATA,
            },
            "required": ["name", "backup_type", "rotation"],
            "additionalProperties": False,
        },
        # Before 2.44 (the handler's 404 from then): an address, as its column holds one.
        "addFloatingIp": {
            "type": "object",
            "properties": {
                "address": _ADDRESS,
                "fixed_address": {**_ADDRESS, "type": ["string", "null"]},
            },
            "required": ["address"],
            "additionalProperties": False,
        },
        "removeFloatingIp": {
            "type": "object",
            "properties": {"address": _ADDRESS},
            "required": ["address"],
            "additionalProperties": False,
        },
        "addSecurityGroup": SERVER_GROUP,
        "removeSecurityGroup": SERVER_GROUP,
        **dict.fromkeys(_NO_ARGUMENT, _NOTHING),
    },
}

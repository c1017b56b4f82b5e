"""POST /servers/{server_id}/action: one key, the action, and its argument, per microversion.

The arguments' shapes are checked here: which keys each action takes at the request's
microversion (evacuate's ``onSharedStorage`` until 2.14 and ``force`` from 2.29, a rebuild's
``description`` from 2.19, ``key_name`` from 2.54, ``user_data`` for ``personality`` from
2.57 and ``trusted_image_certificates`` from 2.63, live migration's ``"auto"`` from 2.25 and
``force`` from 2.30, a cold migration's ``host`` from 2.56), their types and the lengths their
columns hold; the handlers do not check them again. What needs parsing (a rebuild's addresses,
files and user data) is left to them, and an action Berth does not have passes the schema and
is refused by name by its handler.
"""

from __future__ import annotations

from typing import Any

from berth.compute.api import microversion
from berth.compute.api.schemas.security_group import SERVER_GROUP
from berth.compute.api.schemas.server import TRUSTED_CERTIFICATES
from berth.compute.api.schemas.server_metadata import METADATA
from berth.compute.guest_input import USER_DATA_LENGTH

Version = tuple[int, int]

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

# A compute host's name (not blanks); null lets the scheduler choose.
_HOST: dict[str, Any] = {
    "description": "null or a host name of 1 to 255 characters",
    "type": ["string", "null"],
    "minLength": 1,
    "maxLength": 255,
    "pattern": "\\S",
}
# The words Nova takes for a boolean flag (evacuate's, live migration's, a rebuild's
# preserve_ephemeral), each in lower case, capitalised or in upper case, or a JSON boolean.
FLAG_WORDS = ("true", "1", "on", "yes", "false", "0", "off", "no")
_FLAG: dict[str, Any] = {
    "type": ["boolean", "string"],
    "enum": [
        True, False,
        *dict.fromkeys(spelled for word in FLAG_WORDS
                       for spelled in (word, word.capitalize(), word.upper())),
    ],
}  # fmt: skip
# Parsed by berth.compute.action_input (a rebuild's addresses and files).
_PARSED: dict[str, Any] = {}


def _nothing_until(what: str, version: str) -> dict[str, Any]:
    """Null or {}, the refusal saying from which microversion ``what`` may be given."""
    said = f"null or {{}} ({what} may be given from microversion {version})"
    return {
        "description": said,
        "anyOf": [{"type": "null"}, {"type": "object", "maxProperties": 0, "description": said}],
    }


def _only(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An argument of these keys and no other."""
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _migrate(version: Version) -> dict[str, Any]:
    if version < microversion.MIGRATE_TO_HOST:
        return _nothing_until("a host", "2.56")
    named = {
        "type": "object",
        "properties": {"host": _HOST},
        "additionalProperties": False,
    }
    return {"anyOf": [{"type": "null"}, named]}


def _migrate_live(version: Version) -> dict[str, Any]:
    properties: dict[str, Any] = {"host": _HOST}
    required = ["host", "block_migration"]
    if version >= microversion.LIVE_MIGRATION_AUTO:
        properties["block_migration"] = {**_FLAG, "enum": [*_FLAG["enum"], "auto"]}
    else:
        properties["block_migration"] = _FLAG
        properties["disk_over_commit"] = _FLAG
        required.append("disk_over_commit")
    if version >= microversion.LIVE_MIGRATION_FORCE:
        properties["force"] = _FLAG
    return _only(properties, required)


def _evacuate(version: Version) -> dict[str, Any]:
    properties: dict[str, Any] = {"host": _HOST, "adminPass": _PASSWORD}
    required: list[str] = []
    if version < microversion.EVACUATE_NO_SHARED_STORAGE:
        properties["onSharedStorage"] = _FLAG
        required.append("onSharedStorage")
    if version >= microversion.EVACUATE_FORCE:
        properties["force"] = _FLAG
    return _only(properties, required)


def _rebuild(version: Version) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "imageRef": {"type": "string", "minLength": 1, "maxLength": 255},
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "metadata": METADATA,
        "adminPass": _PASSWORD,
        "accessIPv4": {"type": ["string", "null"], "maxLength": 64},
        "accessIPv6": {"type": ["string", "null"], "maxLength": 64},
        "OS-DCF:diskConfig": {"enum": ["AUTO", "MANUAL", None]},
        # Accepted and changing nothing: Berth's guests have no ephemeral disks.
        "preserve_ephemeral": _FLAG,
    }
    if version >= microversion.SERVER_DESCRIPTION:
        properties["description"] = {"type": ["string", "null"], "maxLength": 255}
    if version >= microversion.REBUILD_KEY_NAME:
        properties["key_name"] = {"type": ["string", "null"], "minLength": 1, "maxLength": 255}
    if version >= microversion.PERSONALITY_GONE:
        # Base64 text (decoded by berth.compute.guest_input); null removes it.
        properties["user_data"] = {"type": ["string", "null"], "maxLength": USER_DATA_LENGTH}
    else:
        properties["personality"] = _PARSED
    if version >= microversion.TRUSTED_CERTS_IN_SERVER:
        properties["trusted_image_certificates"] = TRUSTED_CERTIFICATES
    return _only(properties, ["imageRef"])


_RESET_STATE: dict[str, Any] = {
    "type": "object",
    "properties": {"state": {"enum": ["active", "error"]}},
    "required": ["state"],
    "additionalProperties": False,
}


def _action(version: Version) -> dict[str, Any]:
    """The action body a request of ``version`` is held to."""
    return {**_ACTION, "properties": {**_ACTION["properties"], **_versioned(version)}}


def _versioned(version: Version) -> dict[str, Any]:
    return {
        "migrate": _migrate(version),
        "os-migrateLive": _migrate_live(version),
        "evacuate": _evacuate(version),
        "rebuild": _rebuild(version),
        # Past Berth's newest microversion.
        "unshelve": _nothing_until("an availability zone", "2.77"),
        "os-resetState": _RESET_STATE,
    }


_ACTION: dict[str, Any] = {
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

# Where an action's arguments change, newest first.
_CHANGES = (
    microversion.TRUSTED_CERTS_IN_SERVER,
    microversion.PERSONALITY_GONE,
    microversion.MIGRATE_TO_HOST,
    microversion.REBUILD_KEY_NAME,
    microversion.LIVE_MIGRATION_FORCE,
    microversion.EVACUATE_FORCE,
    microversion.LIVE_MIGRATION_AUTO,
    microversion.SERVER_DESCRIPTION,
    microversion.EVACUATE_NO_SHARED_STORAGE,
    (2, 1),
)
ACTION_BY_VERSION = [(version, _action(version)) for version in _CHANGES]

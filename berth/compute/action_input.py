"""What a client may ask of a server action or a server update, checked and parsed.

Pure functions, as :mod:`server_input` for a create: each refusal is a
:class:`~berth.compute.exceptions.BadRequest` that names the field. What needs a database (does
the image exist, the key pair?) is checked by the domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from berth.compute import exceptions, guest_input, server_input, server_metadata

_REBOOT_TYPES = {"SOFT": "reboot_soft", "HARD": "reboot_hard"}


def reboot_change(argument: Any) -> str:
    """``{"type": "SOFT" | "HARD"}`` (any case): the power change to make."""
    kind = argument.get("type") if isinstance(argument, dict) else None
    if not isinstance(kind, str) or set(argument) - {"type"}:
        raise exceptions.BadRequest(
            'Invalid input for reboot: {"type": "SOFT"} or {"type": "HARD"} expected.'
        )
    if kind.upper() not in _REBOOT_TYPES or kind not in (kind.upper(), kind.lower(), kind.title()):
        raise exceptions.BadRequest(f"Invalid input for reboot: unknown type {kind!r}.")
    return _REBOOT_TYPES[kind.upper()]


@dataclass(frozen=True)
class Rebuild:
    """A rebuild: the image, the password to report, and what else changes on the server (the
    keys a BuildRequest's instance uses: name, metadata, description, access_ip_v4/v6,
    key_name)."""

    image_ref: str
    admin_pass: str
    changes: dict[str, Any] = field(default_factory=dict)
    # Files the new guest gets (before 2.57).
    personality: tuple[guest_input.InjectedFile, ...] = ()


def rebuild(argument: Mapping[str, Any]) -> Rebuild:
    """``{"imageRef": ..., "name", "metadata", "adminPass", "accessIPv4", "accessIPv6",
    "OS-DCF:diskConfig", "preserve_ephemeral"}``, ``description`` from 2.19, ``key_name`` (null
    removes it) from 2.54, ``personality`` before 2.57 and ``user_data`` (null removes it) from
    2.57, ``trusted_image_certificates`` from 2.63: which keys a microversion takes, and their
    types, are the request schema's (``schemas.server_action``); the values are parsed here."""
    image = argument["imageRef"]
    if not image.strip():
        raise exceptions.BadRequest("Invalid input for field 'imageRef': an image id is required.")
    guest_input.no_trusted_certificates(argument)
    changes = _user_fields(argument)
    if "metadata" in argument:
        changes["metadata"] = server_metadata.parse(argument["metadata"])
    if "key_name" in argument:
        key = argument["key_name"]
        changes["key_name"] = None if key is None else server_input.server_name(key)
    if "user_data" in argument:
        changes["user_data"] = guest_input.user_data(argument["user_data"])
    return Rebuild(
        image_ref=image.rstrip("/").rsplit("/", 1)[-1],
        admin_pass=server_input.admin_pass(argument.get("adminPass")),
        changes=changes,
        personality=guest_input.personality(argument.get("personality")),
    )


def update(body: Any, with_description: bool) -> dict[str, Any]:
    """``{"server": {"name", "accessIPv4", "accessIPv6"}}``, ``description`` (null clears it)
    from 2.19: the changes, under a BuildRequest instance's keys."""
    if not isinstance(body, dict) or not isinstance(body.get("server"), dict):
        raise exceptions.BadRequest("Invalid input: a JSON object under 'server' is required.")
    server: Mapping[str, Any] = body["server"]
    known = {"name", "accessIPv4", "accessIPv6", "OS-DCF:diskConfig"}
    if with_description:
        known.add("description")
    unknown = sorted(set(server) - known)
    if unknown:
        raise exceptions.BadRequest(f"Invalid input: server has unsupported fields {unknown}.")
    return _user_fields(server)


def disk_config_change(given: Mapping[str, Any]) -> dict[str, Any]:
    """``{"auto_disk_config": ...}`` when ``OS-DCF:diskConfig`` is given, else nothing."""
    auto = guest_input.disk_config(given.get("OS-DCF:diskConfig"))
    return {} if auto is None else {"auto_disk_config": auto}


def _user_fields(given: Mapping[str, Any]) -> dict[str, Any]:
    changes: dict[str, Any] = disk_config_change(given)
    if "name" in given:
        changes["name"] = server_input.server_name(given["name"])
    if "description" in given:
        changes["description"] = server_input.description(given["description"])
    for version in (4, 6):
        key = f"accessIPv{version}"
        if key in given:
            changes[f"access_ip_v{version}"] = server_input.access_ip(given[key], version)
    return changes

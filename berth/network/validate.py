"""Checks of request attributes, each refusing bad input with a 400 that names the attribute."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

from berth.network import exceptions

_ABSENT = object()


def known(body: Mapping[str, Any], allowed: Collection[str], resource: str) -> None:
    """Refuse attributes the resource does not have or that cannot be set this way."""
    for name in body:
        if name not in allowed:
            raise exceptions.BadRequest(f"Unrecognized attribute(s) '{name}' for {resource}")


def string(body: Mapping[str, Any], name: str, default: Any = _ABSENT, max_len: int = 255) -> Any:
    value = body.get(name, default)
    if value is _ABSENT:
        raise exceptions.BadRequest(
            f"Failed to parse request. Required attribute '{name}' not specified"
        )
    if value is default and name not in body:
        return value
    if not isinstance(value, str):
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not a valid string."
        )
    if len(value) > max_len:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' exceeds maximum length of {max_len}."
        )
    return value


def strings(body: Mapping[str, Any], names: Collection[str]) -> None:
    """Check the string attributes a body gives (type, at most 255 characters) before anything
    else: upstream checks a body before it looks anything up, so a bad value is a 400 whoever
    asks and whatever the resource (not a 404 or a 403)."""
    for name in names:
        if name in body:
            string(body, name)


def boolean(body: Mapping[str, Any], name: str, default: bool) -> bool:
    value = body.get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise exceptions.InvalidInput(
        f"Invalid input for {name}. Reason: '{value}' is not a valid boolean value."
    )


def integer(
    body: Mapping[str, Any],
    name: str,
    default: Any = None,
    low: int | None = None,
    high: int | None = None,
    *,
    nullable: bool = True,
) -> Any:
    """``body[name]`` as an integer from ``low`` to ``high`` (``default`` when absent); a null
    is kept unless the column cannot hold one (``nullable=False``: a 400)."""
    if not nullable and name in body and body[name] is None:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: 'None' is not an integer."
        )
    value = body.get(name, default)
    if value is None or (value is default and name not in body):
        return value
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not an integer."
        )
    try:
        number = int(value)
    except ValueError:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not an integer."
        ) from None
    if (low is not None and number < low) or (high is not None and number > high):
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{number}' is not in range {low} through {high}."
        )
    return number


def uuid_or_none(body: Mapping[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    return uuid_value(name, value)


def uuid_value(name: str, value: Any) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not a valid UUID."
        ) from None


def one_of(
    body: Mapping[str, Any], name: str, choices: Collection[str], default: Any = _ABSENT
) -> Any:
    value = body.get(name, default)
    if value is _ABSENT:
        raise exceptions.BadRequest(
            f"Failed to parse request. Required attribute '{name}' not specified"
        )
    if value is default and name not in body:
        return value
    if value not in choices:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not in {sorted(choices)}."
        )
    return value


def mapping(body: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = body.get(name) or {}
    if not isinstance(value, dict):
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: '{value}' is not a dictionary."
        )
    return value


def project_of(body: Mapping[str, Any], default: str) -> str:
    """The owner a create names (``project_id`` or the older ``tenant_id``), else the caller's."""
    project = body.get("project_id", body.get("tenant_id"))
    if project is None:
        return default
    if "project_id" in body and "tenant_id" in body and body["project_id"] != body["tenant_id"]:
        raise exceptions.BadRequest("project_id and tenant_id do not match")
    return str(string({"project_id": project}, "project_id"))

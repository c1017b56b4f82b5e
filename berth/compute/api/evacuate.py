"""The server action ``evacuate`` (Nova's ``os-evacuate``), admins only.

``{"evacuate": {"host": "h2", "adminPass": "...", "onSharedStorage": false, "force": false}}``.
Before 2.14 ``onSharedStorage`` is required and the answer is 200 with the administrator password
(the given one, else a new one unless the disk is shared, then null); from 2.14 it is refused
and the answer is 202 without a body. ``force`` (2.29) needs a named host; Berth still asks the
scheduler whether that host can take the server (as Nova does from 2.68, which drops the flag).
The domain is :mod:`berth.compute.evacuate`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import evacuate as domain
from berth.compute import exceptions
from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest

RULE = "os_compute_api:os-evacuate"
NO_SHARED_STORAGE = microversion.EVACUATE_NO_SHARED_STORAGE
FORCE = microversion.EVACUATE_FORCE


def evacuate(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    req.authorize(RULE)
    host, password = _parse(req, argument)
    domain.evacuate(
        req.service,
        req.context,
        server_id,
        lambda project_id: req.allowed(RULE, {"project_id": project_id}),
        host,
    )
    if req.at_least(NO_SHARED_STORAGE):
        return req.no_content(202)
    return req.respond({"adminPass": password})


def _parse(req: ComputeRequest, argument: Any) -> tuple[str | None, str | None]:
    """The named host and the password to answer (before 2.14)."""
    if not isinstance(argument, dict):
        raise _invalid("an object expected")
    allowed = {"host", "adminPass"}
    if not req.at_least(NO_SHARED_STORAGE):
        allowed.add("onSharedStorage")
    if req.at_least(FORCE):
        allowed.add("force")
    unknown = set(argument) - allowed
    if unknown:
        raise _invalid(f"unknown keys {sorted(unknown)}")
    host = argument.get("host")
    if host is not None and (not isinstance(host, str) or not host.strip() or len(host) > 255):
        raise _invalid("host is a name of 1 to 255 characters")
    password = argument.get("adminPass")
    if password is not None and not isinstance(password, str):
        raise _invalid("adminPass is a string")
    if _flag(argument, "force") and host is None:
        raise exceptions.BadRequest("Can't force to a non-provided destination")
    if req.at_least(NO_SHARED_STORAGE):
        return host, None
    if "onSharedStorage" not in argument:
        raise _invalid("'onSharedStorage' is a required property")
    if _flag(argument, "onSharedStorage"):
        if password is not None:
            raise exceptions.BadRequest("admin password can't be changed on existing disk")
        return host, None
    return host, password if password is not None else domain.new_password()


def _flag(argument: dict[str, Any], name: str) -> bool:
    """A boolean; Nova also takes the strings of one ("true", "0", "no"...)."""
    value = argument.get(name, False)
    if isinstance(value, bool):
        return value
    words = {"true": True, "1": True, "yes": True, "on": True}
    words |= {"false": False, "0": False, "no": False, "off": False}
    if isinstance(value, str) and value.lower() in words:
        return words[value.lower()]
    raise _invalid(f"{name} is a boolean")


def _invalid(why: str) -> exceptions.BadRequest:
    return exceptions.BadRequest(f"Invalid input for evacuate: {why}.")

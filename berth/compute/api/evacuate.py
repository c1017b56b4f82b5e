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
# Nova's words for true (the schema takes these and their opposites, and true and false).
_TRUE_WORDS = frozenset({"true", "1", "on", "yes"})


def evacuate(req: ComputeRequest, server_id: str, argument: dict[str, Any]) -> Response:
    req.authorize(RULE)
    host, password = _parse(req, argument)
    domain.evacuate(
        req.service,
        req.context,
        server_id,
        lambda project_id: req.allowed(RULE, {"project_id": project_id}),
        host,
    )
    if req.at_least(microversion.EVACUATE_NO_SHARED_STORAGE):
        return req.no_content(202)
    return req.respond({"adminPass": password})


def _parse(req: ComputeRequest, argument: dict[str, Any]) -> tuple[str | None, str | None]:
    """The named host and the password to answer (before 2.14); the argument's shape is the
    request schema's (``schemas.server_action``)."""
    host = argument.get("host")
    password = argument.get("adminPass")
    if _flag(argument, "force") and host is None:
        raise exceptions.BadRequest("Can't force to a non-provided destination")
    if req.at_least(microversion.EVACUATE_NO_SHARED_STORAGE):
        return host, None
    if _flag(argument, "onSharedStorage"):
        if password is not None:
            raise exceptions.BadRequest("admin password can't be changed on existing disk")
        return host, None
    return host, password if password is not None else domain.new_password()


def _flag(argument: dict[str, Any], name: str) -> bool:
    """A boolean, or one of Nova's strings for one ("true", "0", "no"...)."""
    value = argument.get(name, False)
    return value if isinstance(value, bool) else value.lower() in _TRUE_WORDS

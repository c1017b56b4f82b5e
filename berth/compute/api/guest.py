"""Server actions on the guest: ``rescue`` (200 with the rescue's ``adminPass``), ``unrescue``
and ``changePassword`` (202), ``os-getConsoleOutput`` (200 with the ``output``). The domain is
:mod:`berth.compute.guest_actions`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, guest_actions, server_input
from berth.compute.api.request import ComputeRequest


def rescue(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-rescue"
    req.authorize(rule)
    given = argument or {}
    image_ref = given.get("rescue_image_ref")
    if image_ref is not None:
        _check_uuid(image_ref, "rescue_image_ref")
    admin_pass = server_input.admin_pass(given.get("adminPass") or None)
    guest_actions.rescue(
        req.service, req.context, server_id, _may_see(req, rule), image_ref, admin_pass
    )
    return req.respond({"adminPass": admin_pass})


def unrescue(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-unrescue"
    req.authorize(rule)
    guest_actions.unrescue(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def change_password(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-admin-password"
    req.authorize(rule)
    guest_actions.change_password(
        req.service, req.context, server_id, _may_see(req, rule), argument["adminPass"]
    )
    return req.no_content(202)


def console_output(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-console-output"
    req.authorize(rule)
    length = argument.get("length")
    # The schema took an integer of at least -1 or a string of digits; -1 is the whole log.
    wanted = None if length is None or int(length) == -1 else int(length)
    if wanted is not None and wanted < 0:
        raise exceptions.BadRequest(
            f"Invalid input for field 'length': {length!r} is less than the minimum of -1."
        )
    output = guest_actions.console_output(
        req.service, req.context, server_id, _may_see(req, rule), wanted
    )
    return req.respond({"output": output})


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    # A server the rule does not allow the caller on is a 404, hiding that it exists.
    return lambda project_id: req.allowed(rule, {"project_id": project_id})


def _check_uuid(value: str, what: str) -> None:
    try:
        uuid.UUID(value)
    except ValueError:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': {value!r} is not a UUID."
        ) from None

"""Server actions that change a server's power: reboot, os-stop, os-start, pause, unpause,
suspend, resume.

Each answers 202 once the change is handed to the server's host; the server shows REBOOT or
HARD_REBOOT while it reboots, then SHUTOFF, PAUSED, SUSPENDED or ACTIVE. A server in a state
that does not allow the change is a 409, a locked one a 409 to all but admins. The domain is
:mod:`berth.compute.power`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import action_input, power
from berth.compute.api.request import ComputeRequest


def reboot(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:reboot"
    req.authorize(rule)
    return _change(req, server_id, rule, action_input.reboot_change(argument))


def stop(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "servers:stop", "stop")


def start(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "servers:start", "start")


def pause(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "os-pause-server:pause", "pause")


def unpause(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "os-pause-server:unpause", "unpause")


def suspend(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "os-suspend-server:suspend", "suspend")


def resume(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _simple(req, server_id, "os-suspend-server:resume", "resume")


def _simple(req: ComputeRequest, server_id: str, rule: str, change: str) -> Response:
    """An action that takes no argument (null or {}, the request schema's check): its rule on
    the caller's project, then the change."""
    name = f"os_compute_api:{rule}"
    req.authorize(name)
    return _change(req, server_id, name, change)


def _change(req: ComputeRequest, server_id: str, rule: str, change: str) -> Response:
    # A server the rule does not allow the caller on is a 404, hiding that it exists.
    power.change(
        req.service, req.context, server_id,
        lambda project_id: req.allowed(rule, {"project_id": project_id}), change,
    )  # fmt: skip
    return req.no_content(202)

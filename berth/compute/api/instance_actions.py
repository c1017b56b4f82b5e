"""/servers/{server_id}/os-instance-actions: what was done to a server, request by request.

The workflow records the actions (:mod:`berth.compute.actions`); these handlers read them. A
server of another project is a 404 to whom the rule does not allow on it, as for the server.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from berth.compute import actions, exceptions, server_views
from berth.compute.api import microversion, paging
from berth.compute.api.request import ComputeRequest

_EVENTS = "os_compute_api:os-instance-actions:events"


def index(req: ComputeRequest) -> Response:
    rule = "os_compute_api:os-instance-actions:list"
    _, found = _server_actions(req, rule)
    body: dict[str, Any] = {}
    if req.at_least(microversion.ACTIONS_PAGED):
        since = paging.changes_since(req)
        if since is not None:
            found = [action for action in found if action.updated_at >= since]
        page = paging.parse(req)
        found = paging.after_marker(found, page, lambda action: str(action.row["request_id"]))
        last = str(found[-1].row["request_id"]) if found else None
        following = paging.links(req, "actions", found, page, last)
        if following:
            body["links"] = following["actions_links"]  # upstream's name for this list's links
    return req.respond({"instanceActions": [_transform_action(req, a) for a in found], **body})


def show(req: ComputeRequest) -> Response:
    rule = "os_compute_api:os-instance-actions:show"
    project_id, found = _server_actions(req, rule)
    request_id = req.param("request_id")
    action = next((a for a in found if a.row["request_id"] == request_id), None)
    if action is None:
        raise exceptions.NotFound(
            f"Action {request_id} on instance {req.param('server_id')} could not be found."
        )
    view = _transform_action(req, action)
    admin = req.allowed(_EVENTS, {"project_id": project_id})
    if admin or req.at_least(microversion.ACTION_EVENTS_FOR_ALL):
        view["events"] = [_transform_event(req, e, project_id, admin) for e in action.events]
    return req.respond({"instanceAction": view})


def _server_actions(req: ComputeRequest, rule: str) -> tuple[str, list[actions.Action]]:
    req.authorize(rule)
    return actions.for_server(
        req.service,
        req.context,
        req.param("server_id"),
        lambda project_id: req.allowed(rule, {"project_id": project_id}),
        include_deleted=req.at_least(microversion.DELETED_SERVER_ACTIONS),
    )


def _transform_action(req: ComputeRequest, action: actions.Action) -> dict[str, Any]:
    """An action as upstream shows it::

    {"action": "create", "instance_uuid": "...", "request_id": "req-...", "user_id": "...",
     "project_id": "...", "start_time": "2026-11-25T11:00:00.000000", "message": null,
     "updated_at": "2026-11-25T11:00:05.000000"}   (updated_at from 2.58)
    """
    row = action.row
    view: dict[str, Any] = {
        "action": row["action"],
        "instance_uuid": row["instance_uuid"],
        "request_id": row["request_id"],
        "user_id": row["user_id"],
        "project_id": row["project_id"],
        "start_time": _time(row["start_time"]),
        "message": row["message"],
    }
    if req.at_least(microversion.ACTIONS_PAGED):
        view["updated_at"] = _time(action.updated_at)
    return view


def _transform_event(
    req: ComputeRequest, event: Mapping[str, Any], project_id: str, admin: bool
) -> dict[str, Any]:
    """An event as upstream shows it::

    {"event": "compute_build_and_run_instance", "start_time": "...", "finish_time": "...",
     "result": "Error", "traceback": "why it failed",   (traceback to admins only)
     "host": "h1", "hostId": "5f1c..."}   (from 2.62; host to admins only)
    """
    view: dict[str, Any] = {
        "event": event["event"],
        "start_time": _time(event["start_time"]),
        "finish_time": _time(event["finish_time"]),
        "result": event["result"],
    }
    if admin:
        view["traceback"] = event["details"]
    if req.at_least(microversion.EVENT_HOSTS):
        view["hostId"] = server_views.host_id(project_id, event["host"])
        if admin:
            view["host"] = event["host"] or ""
    return view


def _time(when: dt.datetime | None) -> str | None:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when is not None else None

"""POST /os-server-external-events: other services' events about servers (the network
service's port changes), for a token with the service role, as upstream's default.

The answer lists each event with its ``code`` and ``status`` (``failed`` for one that was not
accepted, else as given, ``completed`` by default): 200 when every event was accepted, 207 when
only some were, 404 when none was. The domain is :mod:`berth.compute.server_events`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, server_events
from berth.compute.api.request import ComputeRequest


def create(req: ComputeRequest) -> Response:
    """``{"events": [{"name": "network-changed", "server_uuid": U, "status": "completed",
    "code": 200}]}``"""
    req.authorize("os_compute_api:os-server-external-events:create", {})
    # Its shape is checked by the route's schema (``schemas.bodies``).
    body = req.json_body()
    outcomes = server_events.deliver(req.service, body["events"])
    accepted = [o for o in outcomes if o.code == server_events.ACCEPTED]
    if not accepted:
        raise exceptions.NotFound("No instances found for any event.")
    status = 200 if len(accepted) == len(outcomes) else 207
    return req.respond({"events": [_transform(o) for o in outcomes]}, status)


def _transform(outcome: server_events.Outcome) -> dict[str, Any]:
    event = outcome.event
    view = {
        "name": event["name"],
        "server_uuid": event["server_uuid"],
        "status": event.get("status", "completed")
        if outcome.code == server_events.ACCEPTED
        else "failed",
        "code": outcome.code,
    }
    if "tag" in event:
        view["tag"] = event["tag"]
    return view

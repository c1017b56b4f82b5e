"""The server action ``rebuild``: a new image (and name, metadata, password, description,
access addresses, disk config, personality files before 2.57, from 2.54 key pair, from 2.57
user data; from 2.63 no trusted image certificates, as Berth verifies no image signatures)
for the server, on the host it is on.

Answers 202 with the server as an update shows it, now in REBUILD, with its ``adminPass``
(from 2.54 its ``key_name``, from 2.57 ``user_data``). The domain is
:mod:`berth.compute.rebuild`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import action_input, rebuild, server_views
from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest
from berth.compute.api.servers import viewer


def rebuild_server(req: ComputeRequest, server_id: str, argument: dict[str, Any]) -> Response:
    rule = "os_compute_api:servers:rebuild"
    req.authorize(rule)
    request = action_input.rebuild(argument)

    def may_see(project_id: str) -> bool:
        return req.allowed(rule, {"project_id": project_id})

    server = rebuild.rebuild(req.service, req.context, server_id, may_see, request)
    view = server_views.rebuilt(
        server,
        viewer(req),
        request.admin_pass,
        key_name=req.at_least(microversion.REBUILD_KEY_NAME),
        user_data=req.at_least(microversion.REBUILD_USER_DATA),
    )
    return req.respond({"server": view}, 202)

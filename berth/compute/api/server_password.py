"""/servers/{server_id}/os-server-password: the encrypted password a server's guest posted.

    GET    .../os-server-password    {"password": ""}
    DELETE .../os-server-password    204

In Nova a guest agent posts its encrypted password to the metadata service, and this resource
reads or clears it. Berth's servers are simulated and have no guest and no metadata service,
so no password is ever posted: GET answers the empty string, Nova's answer for a server without
one, and DELETE has nothing to clear. Both still answer 404 for a server the caller may not see.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute.api import server_refs
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-server-password:"


def show(req: ComputeRequest) -> Response:
    server_refs.authorized(req, _RULE + "show").get()
    return req.respond({"password": ""})


def clear(req: ComputeRequest) -> Response:
    server_refs.authorized(req, _RULE + "clear").get()
    return req.no_content()

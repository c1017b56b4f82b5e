"""The route table of the Compute API: every path, its methods and their handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.compute.api import root, servers
from berth.compute.api.request import ComputeRequest

Handler = Callable[[ComputeRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": root.versions},
    "/v2.1": {"GET": root.version},
    "/v2.1/servers": {"GET": servers.list_servers, "POST": servers.create_server},
    # Before "/v2.1/servers/{server_id}", which would take "detail" for an id.
    "/v2.1/servers/detail": {"GET": servers.list_servers_detail},
    "/v2.1/servers/{server_id}": {"GET": servers.show_server, "DELETE": servers.delete_server},
}

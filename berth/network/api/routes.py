"""The route table of the Networking API: every path, its methods and their handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.network.api import extensions, networks, root
from berth.network.api.request import NetworkRequest

Handler = Callable[[NetworkRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": root.versions},
    "/v2.0": {"GET": root.resources},
    "/v2.0/extensions": {"GET": extensions.list_extensions},
    "/v2.0/extensions/{alias}": {"GET": extensions.show_extension},
    "/v2.0/networks": {"GET": networks.list_networks, "POST": networks.create_network},
    "/v2.0/networks/{network_id}": {
        "GET": networks.show_network,
        "PUT": networks.update_network,
        "DELETE": networks.delete_network,
    },
    "/v2.0/segments": {"GET": networks.list_segments, "POST": networks.create_segment},
    "/v2.0/segments/{segment_id}": {
        "GET": networks.show_segment,
        "PUT": networks.update_segment,
        "DELETE": networks.delete_segment,
    },
}

"""/servers/{server_id}/ips: a server's fixed addresses by network, as its ports last had them.

    GET .../ips                    {"addresses": {"private": [{"version": 4, "addr": "10.0.0.5"}]}}
    GET .../ips/{network_label}    {"private": [...]}; 404 when the server is on no such network

The server's views show the same addresses with their MACs and types
(:func:`berth.compute.server_views.addresses`); these show only the version and the address,
as Nova's. A server still being scheduled has none yet.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, server_views
from berth.compute.api import server_refs
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:ips:"


def index(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "index").get()
    return req.respond({"addresses": _transform_addresses(server)})


def show(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "show").get()
    label = req.param("network_label")
    found = _transform_addresses(server)
    if label not in found:
        raise exceptions.NotFound(f"Instance {server.uuid} is not on network {label!r}.")
    return req.respond({label: found[label]})


def _transform_addresses(server: server_views.Server) -> dict[str, list[dict[str, Any]]]:
    """``{"private": [{"version": 4, "addr": "10.0.0.5"}]}``"""
    return {
        label: [{"version": entry["version"], "addr": entry["addr"]} for entry in entries]
        for label, entries in server_views.addresses(server.network_info).items()
    }

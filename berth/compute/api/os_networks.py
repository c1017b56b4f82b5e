"""/os-networks (before 2.36; a 404 from then): the networks the caller can use, as Nova's proxy
to the Networking API shows them. Only ``id`` and ``label`` (the network's name) come from the
network service; the nova-network fields Nova still shows are null, and an admin sees Nova's
admin fields too, null as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute.api.request import ComputeRequest

REMOVED = (2, 36)
_FIELDS = (
    "cidr", "netmask", "gateway", "broadcast", "dns1", "dns2", "cidr_v6", "gateway_v6",
    "netmask_v6",
)  # fmt: skip
_ADMIN_FIELDS = (
    "created_at", "updated_at", "deleted_at", "deleted", "injected", "bridge", "vlan",
    "vpn_public_address", "vpn_public_port", "vpn_private_address", "dhcp_start", "project_id",
    "host", "bridge_interface", "multi_host", "priority", "rxtx_base", "mtu", "dhcp_server",
    "enable_dhcp", "share_address",
)  # fmt: skip


def index(req: ComputeRequest) -> Response:
    """``{"networks": [{"id": ..., "label": "public", "cidr": null, ...}]}``"""
    _check_served(req)
    req.authorize("os_compute_api:os-networks:list")
    return req.respond({"networks": [_transform(req, n) for n in _usable(req)]})


def show(req: ComputeRequest) -> Response:
    """``{"network": {"id": ..., "label": "public", ...}}``"""
    _check_served(req)
    req.authorize("os_compute_api:os-networks:view")
    network_id = req.param("network_id")
    for network in _usable(req):
        if network["id"] == network_id:
            return req.respond({"network": _transform(req, network)})
    raise exceptions.NotFound(f"Network {network_id} could not be found.")


def _usable(req: ComputeRequest) -> list[dict[str, Any]]:
    """The networks the caller may use: its project's, shared and external ones (all for an
    admin), as the network service would list them to the caller."""
    if req.service.network is None:
        raise exceptions.ServiceUnavailable("The network service is not configured.")
    return [
        network
        for network in req.service.network.networks()
        if req.is_admin
        or network.get("shared")
        or network.get("router:external")
        or network.get("project_id") == req.project_id
    ]


def _transform(req: ComputeRequest, network: Mapping[str, Any]) -> dict[str, Any]:
    fields = _FIELDS + _ADMIN_FIELDS if req.is_admin else _FIELDS
    return {"id": network["id"], "label": network["name"], **dict.fromkeys(fields)}


def _check_served(req: ComputeRequest) -> None:
    if req.at_least(REMOVED):
        raise exceptions.NotFound("The resource could not be found.")

"""Routers and floating IPs: names and descriptions as their columns hold them, addresses no
longer than their columns (the domain parses them), the gateway's and a route's parts by type;
how many routes a router takes, and which gateway attributes only an admin may set, are the
domain's to say."""

from __future__ import annotations

from typing import Any

from berth.network.api.schemas.common import (
    ADDRESS,
    BOOLEAN,
    DESCRIPTION,
    NAME,
    PROJECT,
    UUID,
    UUID_OR_NULL,
    one,
)

_ADDRESS_OR_NULL: dict[str, Any] = {"type": ["string", "null"], "maxLength": 64}
_GATEWAY: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {
        "network_id": UUID,
        "enable_snat": BOOLEAN,
        "external_fixed_ips": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"subnet_id": UUID, "ip_address": ADDRESS},
            },
        },
    },
}
_ROUTES: dict[str, Any] = {
    "type": ["array", "null"],
    "items": {
        "type": "object",
        "properties": {"destination": ADDRESS, "nexthop": ADDRESS},
    },
}
_CHANGEABLE: dict[str, Any] = {
    "name": NAME,
    "description": DESCRIPTION,
    "admin_state_up": BOOLEAN,
    "external_gateway_info": _GATEWAY,
}

ROUTER_CREATE = one("router", {**_CHANGEABLE, "project_id": PROJECT, "tenant_id": PROJECT})
ROUTER_UPDATE = one("router", {**_CHANGEABLE, "routes": _ROUTES})

# {"subnet_id": ...} or {"port_id": ...}: not under a member key.
INTERFACE: dict[str, Any] = {
    "type": "object",
    "properties": {"subnet_id": UUID_OR_NULL, "port_id": UUID_OR_NULL},
}

_FLOATING_CHANGEABLE: dict[str, Any] = {
    "port_id": UUID_OR_NULL,
    "fixed_ip_address": _ADDRESS_OR_NULL,
    "description": DESCRIPTION,
}
FLOATINGIP_CREATE = one(
    "floatingip",
    {
        **_FLOATING_CHANGEABLE,
        "floating_network_id": UUID,
        "floating_ip_address": _ADDRESS_OR_NULL,
        "subnet_id": UUID_OR_NULL,
        "project_id": PROJECT,
        "tenant_id": PROJECT,
    },
)
FLOATINGIP_UPDATE = one("floatingip", _FLOATING_CHANGEABLE)

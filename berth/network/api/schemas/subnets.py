"""Subnets: addresses and CIDRs as strings their columns hold (the domain parses them), pools
and routes as lists of them."""

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
    one_or_bulk,
)
from berth.network.subnets import IPV6_MODES

_NULLABLE_ADDRESS: dict[str, Any] = {**ADDRESS, "type": ["string", "null"]}
_IPV6_MODE: dict[str, Any] = {"enum": [*IPV6_MODES, None]}

_CHANGEABLE: dict[str, Any] = {
    "name": NAME,
    "description": DESCRIPTION,
    "gateway_ip": _NULLABLE_ADDRESS,
    "allocation_pools": {
        "type": ["array", "null"],
        "items": {
            "type": "object",
            "properties": {"start": ADDRESS, "end": ADDRESS},
            "required": ["start", "end"],
        },
    },
    "dns_nameservers": {"type": ["array", "null"], "items": ADDRESS},
    "host_routes": {
        "type": ["array", "null"],
        "items": {
            "type": "object",
            "properties": {"destination": ADDRESS, "nexthop": ADDRESS},
            "required": ["destination", "nexthop"],
        },
    },
    "enable_dhcp": BOOLEAN,
    "service_types": {"type": ["array", "null"], "items": {"type": "string", "maxLength": 255}},
}

CREATE = one_or_bulk(
    "subnet",
    "subnets",
    {
        **_CHANGEABLE,
        "network_id": UUID,
        "ip_version": {"enum": [4, 6]},
        "cidr": ADDRESS,
        "ipv6_ra_mode": _IPV6_MODE,
        "ipv6_address_mode": _IPV6_MODE,
        "segment_id": UUID_OR_NULL,
        "project_id": PROJECT,
        "tenant_id": PROJECT,
        "subnetpool_id": UUID_OR_NULL,
    },
)
UPDATE = one("subnet", _CHANGEABLE)

"""Networks and segments: names and descriptions as their columns hold them, the MTU an
integer (never null: the column is not), the provider attributes as a segment's columns."""

from __future__ import annotations

from typing import Any

from berth.common.validation import MAX_INT, integer, string
from berth.network.api.schemas.common import (
    BOOLEAN,
    DESCRIPTION,
    NAME,
    PROJECT,
    UUID,
    UUID_OR_NULL,
    one,
    one_or_bulk,
)
from berth.network.networks import MAX_VNI, NETWORK_TYPES

NETWORK_TYPE: dict[str, Any] = {"enum": list(NETWORK_TYPES)}
PHYSICAL_NETWORK = string(64, nullable=True)
# Which range holds (VLAN or VNI) depends on the type: the domain says.
SEGMENTATION_ID: dict[str, Any] = {"anyOf": [integer(1, MAX_VNI), {"type": "null"}]}

_PROVIDER: dict[str, Any] = {
    "provider:network_type": NETWORK_TYPE,
    "provider:physical_network": PHYSICAL_NETWORK,
    "provider:segmentation_id": SEGMENTATION_ID,
}
_CHANGEABLE: dict[str, Any] = {
    "name": NAME,
    "description": DESCRIPTION,
    "admin_state_up": BOOLEAN,
    "shared": BOOLEAN,
    "router:external": BOOLEAN,
    # Its upper bound is what the network's segments carry: the domain's to say.
    "mtu": integer(68, MAX_INT),
    "qos_policy_id": UUID_OR_NULL,
    "port_security_enabled": BOOLEAN,
    "is_default": BOOLEAN,
}

CREATE = one_or_bulk(
    "network",
    "networks",
    {
        **_CHANGEABLE,
        **_PROVIDER,
        "project_id": PROJECT,
        "tenant_id": PROJECT,
        "availability_zone_hints": {"type": "array", "items": string(255)},
        "segments": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "object", "properties": _PROVIDER},
        },
    },
)
UPDATE = one("network", _CHANGEABLE)

SEGMENT_CREATE = one(
    "segment",
    {
        "network_id": UUID,
        "network_type": NETWORK_TYPE,
        "physical_network": PHYSICAL_NETWORK,
        "segmentation_id": SEGMENTATION_ID,
        "name": NAME,
        "description": DESCRIPTION,
    },
)
SEGMENT_UPDATE = one("segment", {"name": NAME, "description": DESCRIPTION})

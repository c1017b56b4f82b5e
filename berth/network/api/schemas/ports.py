"""Ports and their bindings: strings as their columns hold them (the host a port is bound to
too), the vNIC type one of those Berth knows."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string
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
from berth.network.ports import VNIC_TYPES

_VNIC_TYPE: dict[str, Any] = {"enum": list(VNIC_TYPES)}
# null unbinds the port.
_HOST = string(255, nullable=True)
_PROFILE: dict[str, Any] = {"type": ["object", "null"]}

_CHANGEABLE: dict[str, Any] = {
    "name": NAME,
    "description": DESCRIPTION,
    "admin_state_up": BOOLEAN,
    # The domain parses it (and says which spellings it takes).
    "mac_address": {"type": "string"},
    "fixed_ips": {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"subnet_id": UUID_OR_NULL, "ip_address": ADDRESS},
        },
    },
    "device_id": string(255),
    "device_owner": string(255),
    "qos_policy_id": UUID_OR_NULL,
    "security_groups": {"type": ["array", "null"], "items": {"type": "string"}},
    "port_security_enabled": BOOLEAN,
    "binding:host_id": _HOST,
    "binding:profile": _PROFILE,
    "binding:vnic_type": _VNIC_TYPE,
}

CREATE = one_or_bulk(
    "port",
    "ports",
    {**_CHANGEABLE, "network_id": UUID, "project_id": PROJECT, "tenant_id": PROJECT},
)
UPDATE = one("port", _CHANGEABLE)

BINDING = one("binding", {"host": string(255), "vnic_type": _VNIC_TYPE, "profile": _PROFILE})

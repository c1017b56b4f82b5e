"""Security groups and their rules: names and descriptions as their columns hold them; a rule's
direction, ethertype, protocol and ports only by type (and the protocol and prefix no longer
than their columns), since the domain words those refusals as Neutron does ("Invalid value for
port 65536", "Security group rule protocol 256 not supported")."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string
from berth.network.api.schemas.common import (
    BOOLEAN,
    DESCRIPTION,
    NAME,
    PROJECT,
    UUID,
    UUID_OR_NULL,
    one,
)

_CHANGEABLE: dict[str, Any] = {"name": NAME, "description": DESCRIPTION, "stateful": BOOLEAN}

GROUP_CREATE = one("security_group", {**_CHANGEABLE, "project_id": PROJECT, "tenant_id": PROJECT})
GROUP_UPDATE = one("security_group", _CHANGEABLE)

# A port, or an ICMP type or code: a number, or a string of one (Neutron converts both).
_PORT: dict[str, Any] = {"type": ["integer", "string", "null"], "maxLength": 20}

RULE_CREATE = one(
    "security_group_rule",
    {
        "security_group_id": UUID,
        "direction": string(16),
        "ethertype": string(8),
        # A name ("tcp") or a number, either as a string or not.
        "protocol": {"type": ["string", "integer", "null"], "maxLength": 40},
        "port_range_min": _PORT,
        "port_range_max": _PORT,
        "remote_ip_prefix": string(64, nullable=True),
        "remote_group_id": UUID_OR_NULL,
        "description": DESCRIPTION,
        "project_id": PROJECT,
        "tenant_id": PROJECT,
    },
)

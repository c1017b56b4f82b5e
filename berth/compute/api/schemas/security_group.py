"""Nova's security group proxies (before 2.36): a group's name and description of at most 255
characters (the network's columns), a rule's parts by type; the handler and the domain say
what is missing or out of range, as Nova words it ("Not enough parameters to build a valid
rule", "Valid TCP ports should be between 1-65535")."""

from __future__ import annotations

from typing import Any

_TEXT: dict[str, Any] = {"type": "string", "maxLength": 255}
# A port or ICMP type or code, as a number or a string of one.
_PORT: dict[str, Any] = {"type": ["integer", "string", "null"], "maxLength": 20}
# A group id: the domain parses it (Nova's clients send it as a string or a number).
_GROUP_ID: dict[str, Any] = {"type": ["string", "integer", "null"], "maxLength": 255}

GROUP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "security_group": {
            "type": "object",
            "properties": {"name": _TEXT, "description": _TEXT},
        }
    },
    "required": ["security_group"],
}

RULE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "security_group_rule": {
            "type": "object",
            "properties": {
                "parent_group_id": _GROUP_ID,
                "group_id": _GROUP_ID,
                "ip_protocol": {"type": ["string", "integer", "null"], "maxLength": 40},
                "from_port": _PORT,
                "to_port": _PORT,
                "cidr": {"type": ["string", "null"], "maxLength": 64},
            },
        }
    },
    "required": ["security_group_rule"],
}

# {"addSecurityGroup": {"name": "web"}}: a group's name (or id) as its column holds it.
SERVER_GROUP: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 255}},
    "required": ["name"],
}

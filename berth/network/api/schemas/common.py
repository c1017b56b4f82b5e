"""Attribute schemas every Networking resource shares, and the two body shapes: one resource
under its member key, and a create's bulk form, a list under its collection key. Which
attributes are required is the domain's to say, in Neutron's words ("Failed to parse request.
Required attribute 'cidr' not specified")."""

from __future__ import annotations

from typing import Any

from berth.common.validation import BOOLEAN, string

NAME = string(255)
DESCRIPTION = string(255)
PROJECT = string(255)
# A UUID is parsed by the domain (which takes its other spellings too).
UUID_OR_NULL: dict[str, Any] = {"type": ["string", "null"]}
UUID: dict[str, Any] = {"type": "string"}
# An address or a CIDR, parsed by the domain; no spelling of one is longer.
ADDRESS = string(64)

__all__ = ["ADDRESS", "BOOLEAN", "DESCRIPTION", "NAME", "PROJECT", "UUID", "UUID_OR_NULL"]


def resource(attributes: dict[str, Any]) -> dict[str, Any]:
    """One resource's attributes (unknown ones pass, for the domain to refuse)."""
    return {"type": "object", "properties": attributes}


def one(member: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """``{"network": {...}}``: an update's body."""
    return {
        "type": "object",
        "properties": {member: resource(attributes)},
        "required": [member],
    }


def one_or_bulk(member: str, collection: str, attributes: dict[str, Any]) -> dict[str, Any]:
    """``{"network": {...}}`` or ``{"networks": [{...}, ...]}``: a create's body."""
    item = resource(attributes)
    return {
        "type": "object",
        "properties": {
            member: item,
            collection: {"type": "array", "minItems": 1, "items": item},
        },
        "anyOf": [{"required": [member]}, {"required": [collection]}],
    }

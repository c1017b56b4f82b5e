"""What Placement's operations answer at the newest microversion (1.39), for its OpenAPI
document, and the query parameters its lists read. Each schema names the members every answer
of that operation has; older microversions answer a subset (upstream's API reference)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.common.openapi import Reply

_STRING: dict[str, Any] = {"type": "string"}
_INTEGER: dict[str, Any] = {"type": "integer"}
_UUID: dict[str, Any] = {"type": "string", "format": "uuid"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STRING}
_LINKS: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"rel": _STRING, "href": _STRING},
        "required": ["rel", "href"],
    },
}
# Amounts by resource class.
_AMOUNTS: dict[str, Any] = {"type": "object", "additionalProperties": _INTEGER}


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _with_generation(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    """A provider's sub-resource, with the provider's generation it was read at."""
    return _object(
        {**properties, "resource_provider_generation": _INTEGER},
        *required,
        "resource_provider_generation",
    )


PROVIDER = _object(
    {
        "uuid": _UUID,
        "name": _STRING,
        "generation": _INTEGER,
        "parent_provider_uuid": {"type": ["string", "null"]},
        "root_provider_uuid": _UUID,
        "links": _LINKS,
    },
    "uuid", "name", "generation", "parent_provider_uuid", "root_provider_uuid", "links",
)  # fmt: skip
INVENTORY = _object(
    {
        "total": _INTEGER,
        "reserved": _INTEGER,
        "min_unit": _INTEGER,
        "max_unit": _INTEGER,
        "step_size": _INTEGER,
        "allocation_ratio": {"type": "number"},
    },
    "total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio",
)  # fmt: skip
# One inventory, with its provider's generation.
_ONE_INVENTORY = _with_generation(dict(INVENTORY["properties"]), *INVENTORY["required"])
INVENTORIES = _with_generation(
    {"inventories": {"type": "object", "additionalProperties": INVENTORY}}, "inventories"
)
AGGREGATES = _with_generation({"aggregates": {"type": "array", "items": _UUID}}, "aggregates")
PROVIDER_TRAITS = _with_generation({"traits": _STRINGS}, "traits")
PROVIDER_USAGES = _with_generation({"usages": _AMOUNTS}, "usages")
PROVIDER_ALLOCATIONS = _with_generation(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": _object({"resources": _AMOUNTS}, "resources"),
        }
    },
    "allocations",
)
# A consumer's: empty, and nothing else, for one with no allocations.
CONSUMER_ALLOCATIONS = _object(
    {
        "allocations": {
            "type": "object",
            "additionalProperties": _object(
                {"generation": _INTEGER, "resources": _AMOUNTS}, "resources"
            ),
        },
        "consumer_generation": _INTEGER,
        "project_id": _STRING,
        "user_id": _STRING,
        "consumer_type": _STRING,
    },
    "allocations",
)
# By consumer type from 1.38, each with its consumer_count.
USAGES = _object({"usages": {"type": "object"}}, "usages")
RESOURCE_CLASS = _object({"name": _STRING, "links": _LINKS}, "name", "links")
CANDIDATES = _object(
    {
        "allocation_requests": {
            "type": "array",
            "items": _object(
                {
                    "allocations": {
                        "type": "object",
                        "additionalProperties": _object({"resources": _AMOUNTS}, "resources"),
                    },
                    # Which providers serve each request group (1.34).
                    "mappings": {"type": "object", "additionalProperties": _STRINGS},
                },
                "allocations",
            ),
        },
        "provider_summaries": {
            "type": "object",
            "additionalProperties": _object(
                {
                    "resources": {
                        "type": "object",
                        "additionalProperties": _object(
                            {"capacity": _INTEGER, "used": _INTEGER}, "capacity", "used"
                        ),
                    },
                    "traits": _STRINGS,
                    "parent_provider_uuid": {"type": ["string", "null"]},
                    "root_provider_uuid": _UUID,
                },
                "resources",
            ),
        },
    },
    "allocation_requests",
    "provider_summaries",
)
VERSIONS = _object(
    {
        "versions": {
            "type": "array",
            "items": _object(
                {
                    "id": _STRING,
                    "min_version": _STRING,
                    "max_version": _STRING,
                    "status": _STRING,
                    "links": _LINKS,
                },
                "id",
                "min_version",
                "max_version",
                "status",
                "links",
            ),
        }
    },
    "versions",
)

_PROVIDER = "/resource_providers/{uuid}"
_INVENTORY = f"{_PROVIDER}/inventories/{{resource_class}}"

REPLIES: Mapping[tuple[str, str], Reply] = {
    ("GET", "/"): Reply(200, VERSIONS),
    ("GET", "/resource_providers"): Reply(
        200,
        _object({"resource_providers": {"type": "array", "items": PROVIDER}}, "resource_providers"),
    ),
    ("POST", "/resource_providers"): Reply(200, PROVIDER),
    ("GET", _PROVIDER): Reply(200, PROVIDER),
    ("PUT", _PROVIDER): Reply(200, PROVIDER),
    ("DELETE", _PROVIDER): Reply(204, None),
    ("GET", f"{_PROVIDER}/inventories"): Reply(200, INVENTORIES),
    ("POST", f"{_PROVIDER}/inventories"): Reply(201, _ONE_INVENTORY),
    ("PUT", f"{_PROVIDER}/inventories"): Reply(200, INVENTORIES),
    ("DELETE", f"{_PROVIDER}/inventories"): Reply(204, None),
    ("GET", _INVENTORY): Reply(200, _ONE_INVENTORY),
    ("PUT", _INVENTORY): Reply(200, _ONE_INVENTORY),
    ("DELETE", _INVENTORY): Reply(204, None),
    ("GET", f"{_PROVIDER}/aggregates"): Reply(200, AGGREGATES),
    ("PUT", f"{_PROVIDER}/aggregates"): Reply(200, AGGREGATES),
    ("GET", f"{_PROVIDER}/traits"): Reply(200, PROVIDER_TRAITS),
    ("PUT", f"{_PROVIDER}/traits"): Reply(200, PROVIDER_TRAITS),
    ("DELETE", f"{_PROVIDER}/traits"): Reply(204, None),
    ("GET", f"{_PROVIDER}/usages"): Reply(200, PROVIDER_USAGES),
    ("GET", f"{_PROVIDER}/allocations"): Reply(200, PROVIDER_ALLOCATIONS),
    ("GET", "/usages"): Reply(200, USAGES),
    ("GET", "/allocation_candidates"): Reply(200, CANDIDATES),
    ("POST", "/allocations"): Reply(204, None),
    ("GET", "/allocations/{consumer_uuid}"): Reply(200, CONSUMER_ALLOCATIONS),
    ("PUT", "/allocations/{consumer_uuid}"): Reply(204, None),
    ("DELETE", "/allocations/{consumer_uuid}"): Reply(204, None),
    ("POST", "/reshaper"): Reply(204, None),
    ("GET", "/traits"): Reply(200, _object({"traits": _STRINGS}, "traits")),
    ("GET", "/traits/{name}"): Reply(204, None),
    ("DELETE", "/traits/{name}"): Reply(204, None),
    ("GET", "/resource_classes"): Reply(
        200,
        _object(
            {"resource_classes": {"type": "array", "items": RESOURCE_CLASS}}, "resource_classes"
        ),
    ),
    ("POST", "/resource_classes"): Reply(201, None),
    ("GET", "/resource_classes/{name}"): Reply(200, RESOURCE_CLASS),
    ("DELETE", "/resource_classes/{name}"): Reply(204, None),
}

# Granular request groups repeat these with a suffix (resources1, required_NET...).
_GROUP_QUERY: dict[str, dict[str, Any]] = {
    "resources": _STRING,
    "required": _STRING,
    "member_of": _STRING,
    "in_tree": _STRING,
}
QUERIES: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = {
    ("GET", "/resource_providers"): {
        **_GROUP_QUERY,
        "name": _STRING,
        "uuid": _STRING,
    },
    ("GET", "/allocation_candidates"): {
        **_GROUP_QUERY,
        "limit": {"type": "integer", "minimum": 1},
        "group_policy": {"enum": ["none", "isolate"]},
        "root_required": _STRING,
        "same_subtree": _STRING,
    },
    ("GET", "/usages"): {"project_id": _STRING, "user_id": _STRING, "consumer_type": _STRING},
    ("GET", "/traits"): {"name": _STRING, "associated": _STRING},
}

"""What the Placement API answers at the newest microversion (1.39), for its OpenAPI document,
and the query parameters its lists read.

Placement's replies have one shape per microversion and no optional views, so each schema
names every key the newest one shows and refuses any other: a key that appears or goes
missing is a change of the API, which a fuzzer should notice. The query parameters are those
the handlers validate queries with, at the newest microversion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.common.openapi import Reply, links_schema
from berth.placement import microversion
from berth.placement.api.schemas import usage
from berth.placement.api.schemas.allocation import RESOURCE_CLASS_PATTERN
from berth.placement.candidates import qsschema

_STRING: dict[str, Any] = {"type": "string"}
_INTEGER: dict[str, Any] = {"type": "integer"}
_UUID: dict[str, Any] = {"type": "string", "format": "uuid"}
_LINKS = links_schema(strict=True)
_TRAITS: dict[str, Any] = {"type": "array", "items": _STRING}


def _exactly(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with each of ``properties`` and nothing else."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _by_class(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object keyed by resource class names."""
    return {
        "type": "object",
        "propertyNames": {"pattern": RESOURCE_CLASS_PATTERN},
        "additionalProperties": dict(schema),
    }


def _by_uuid(schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object keyed by uuids (of providers or consumers)."""
    return {"type": "object", "propertyNames": _UUID, "additionalProperties": dict(schema)}


_AMOUNTS = _by_class(_INTEGER)

VERSIONS = _exactly(
    {
        "versions": {
            "type": "array",
            "items": _exactly(
                {
                    "id": _STRING,
                    "min_version": _STRING,
                    "max_version": _STRING,
                    "status": _STRING,
                    "links": _LINKS,
                }
            ),
        }
    }
)

RESOURCE_PROVIDER = _exactly(
    {
        "uuid": _UUID,
        "name": _STRING,
        "generation": _INTEGER,
        "links": _LINKS,
        # null for a root provider.
        "parent_provider_uuid": {"anyOf": [_UUID, {"type": "null"}]},
        "root_provider_uuid": _UUID,
    }
)
RESOURCE_PROVIDERS = _exactly({"resource_providers": {"type": "array", "items": RESOURCE_PROVIDER}})

_INVENTORY_FIELDS: dict[str, Any] = {
    "total": _INTEGER,
    "reserved": _INTEGER,
    "min_unit": _INTEGER,
    "max_unit": _INTEGER,
    "step_size": _INTEGER,
    "allocation_ratio": {"type": "number"},
}
INVENTORY = _exactly({"resource_provider_generation": _INTEGER, **_INVENTORY_FIELDS})
INVENTORIES = _exactly(
    {
        "resource_provider_generation": _INTEGER,
        "inventories": _by_class(_exactly(_INVENTORY_FIELDS)),
    }
)

AGGREGATES = _exactly(
    {"aggregates": {"type": "array", "items": _UUID}, "resource_provider_generation": _INTEGER}
)
TRAITS = _exactly({"traits": _TRAITS})
PROVIDER_TRAITS = _exactly({"traits": _TRAITS, "resource_provider_generation": _INTEGER})

RESOURCE_CLASS = _exactly(
    {"name": {"type": "string", "pattern": RESOURCE_CLASS_PATTERN}, "links": _LINKS}
)
RESOURCE_CLASSES = _exactly({"resource_classes": {"type": "array", "items": RESOURCE_CLASS}})

# A consumer with no allocations answers {"allocations": {}} alone; one with some also names
# its project, user, generation and type.
CONSUMER_ALLOCATIONS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "allocations": _by_uuid(_exactly({"generation": _INTEGER, "resources": _AMOUNTS})),
        "project_id": _STRING,
        "user_id": _STRING,
        "consumer_generation": _INTEGER,
        "consumer_type": _STRING,
    },
    "required": ["allocations"],
    "dependentRequired": {
        "project_id": ["user_id", "consumer_generation", "consumer_type"],
    },
    "additionalProperties": False,
}
PROVIDER_ALLOCATIONS = _exactly(
    {
        "resource_provider_generation": _INTEGER,
        "allocations": _by_uuid(_exactly({"resources": _AMOUNTS, "consumer_generation": _INTEGER})),
    }
)

PROVIDER_USAGES = _exactly({"resource_provider_generation": _INTEGER, "usages": _AMOUNTS})
# By consumer type ("unknown" for consumers that never gave one), each with its consumer count.
TOTAL_USAGES = _exactly(
    {
        "usages": {
            "type": "object",
            "additionalProperties": {
                **_AMOUNTS,
                "properties": {"consumer_count": _INTEGER},
                "required": ["consumer_count"],
                # consumer_count is not a class name, so it is named outside the pattern.
                "propertyNames": {
                    "anyOf": [{"pattern": RESOURCE_CLASS_PATTERN}, {"const": "consumer_count"}]
                },
            },
        }
    }
)

ALLOCATION_CANDIDATES = _exactly(
    {
        "allocation_requests": {
            "type": "array",
            "items": _exactly(
                {
                    "allocations": _by_uuid(_exactly({"resources": _AMOUNTS})),
                    # Each request group's suffix ("" for the unsuffixed one) to the providers
                    # that satisfy it.
                    "mappings": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": _UUID, "minItems": 1},
                    },
                }
            ),
        },
        "provider_summaries": _by_uuid(
            _exactly(
                {
                    "resources": _by_class(_exactly({"capacity": _INTEGER, "used": _INTEGER})),
                    "traits": _TRAITS,
                    "parent_provider_uuid": {"anyOf": [_UUID, {"type": "null"}]},
                    "root_provider_uuid": _UUID,
                }
            )
        ),
    }
)
# Berth's extension: why a query of allocation candidates found nothing.
CANDIDATES_EXPLAINED = _exactly(
    {
        "allocation_candidates_found": {"type": "boolean"},
        "first_unmet_group": {"type": ["string", "null"]},
        "request_groups": {
            "type": "array",
            "items": _exactly(
                {
                    "suffix": _STRING,
                    "met_alone": {"type": "boolean"},
                    "resources": _by_class(
                        _exactly({"requested": _INTEGER, "providers_with_room": _INTEGER})
                    ),
                    "missing_traits": _TRAITS,
                }
            ),
        },
        "nearest_providers": {
            "type": "array",
            "items": _exactly(
                {
                    "uuid": _UUID,
                    "name": _STRING,
                    "root_provider_uuid": _UUID,
                    "resource_class": _STRING,
                    "requested": _INTEGER,
                    "free": _INTEGER,
                    "capacity": _INTEGER,
                    "used": _INTEGER,
                    "max_unit": _INTEGER,
                }
            ),
        },
    }
)

_PROVIDER = "/resource_providers/{uuid}"
_NEWEST = (microversion.MAX_VERSION.major, microversion.MAX_VERSION.minor)

REPLIES: Mapping[tuple[str, str], Reply] = {
    ("GET", "/"): Reply(200, VERSIONS),
    ("GET", "/resource_providers"): Reply(200, RESOURCE_PROVIDERS),
    # From 1.20 a created provider is answered with its body.
    ("POST", "/resource_providers"): Reply(200, RESOURCE_PROVIDER),
    ("GET", _PROVIDER): Reply(200, RESOURCE_PROVIDER),
    ("PUT", _PROVIDER): Reply(200, RESOURCE_PROVIDER),
    ("DELETE", _PROVIDER): Reply(204, None),
    ("GET", f"{_PROVIDER}/inventories"): Reply(200, INVENTORIES),
    ("POST", f"{_PROVIDER}/inventories"): Reply(201, INVENTORY),
    ("PUT", f"{_PROVIDER}/inventories"): Reply(200, INVENTORIES),
    ("DELETE", f"{_PROVIDER}/inventories"): Reply(204, None),
    ("GET", f"{_PROVIDER}/inventories/{{resource_class}}"): Reply(200, INVENTORY),
    ("PUT", f"{_PROVIDER}/inventories/{{resource_class}}"): Reply(200, INVENTORY),
    ("DELETE", f"{_PROVIDER}/inventories/{{resource_class}}"): Reply(204, None),
    ("GET", f"{_PROVIDER}/aggregates"): Reply(200, AGGREGATES),
    ("PUT", f"{_PROVIDER}/aggregates"): Reply(200, AGGREGATES),
    ("GET", f"{_PROVIDER}/traits"): Reply(200, PROVIDER_TRAITS),
    ("PUT", f"{_PROVIDER}/traits"): Reply(200, PROVIDER_TRAITS),
    ("DELETE", f"{_PROVIDER}/traits"): Reply(204, None),
    ("GET", f"{_PROVIDER}/allocations"): Reply(200, PROVIDER_ALLOCATIONS),
    ("GET", f"{_PROVIDER}/usages"): Reply(200, PROVIDER_USAGES),
    ("GET", "/usages"): Reply(200, TOTAL_USAGES),
    ("GET", "/traits"): Reply(200, TRAITS),
    # PUT /traits/{name} and PUT /resource_classes/{name} answer 201 when they create, 204
    # when it was there already; both without a body.
    ("GET", "/traits/{name}"): Reply(204, None),
    ("DELETE", "/traits/{name}"): Reply(204, None),
    ("GET", "/resource_classes"): Reply(200, RESOURCE_CLASSES),
    ("POST", "/resource_classes"): Reply(201, None),
    ("GET", "/resource_classes/{name}"): Reply(200, RESOURCE_CLASS),
    ("DELETE", "/resource_classes/{name}"): Reply(204, None),
    ("GET", "/allocations/{consumer_uuid}"): Reply(200, CONSUMER_ALLOCATIONS),
    ("PUT", "/allocations/{consumer_uuid}"): Reply(204, None),
    ("DELETE", "/allocations/{consumer_uuid}"): Reply(204, None),
    ("POST", "/allocations"): Reply(204, None),
    ("POST", "/reshaper"): Reply(204, None),
    ("GET", "/allocation_candidates"): Reply(200, ALLOCATION_CANDIDATES),
    ("GET", "/allocation_candidates/explain"): Reply(200, CANDIDATES_EXPLAINED),
}


def _candidates_query() -> dict[str, dict[str, Any]]:
    """The parameters of ``GET /allocation_candidates``: those of the unsuffixed request group
    and the request-wide ones, and one numbered group's, as an example of granular groups (any
    suffix of up to 64 letters, digits, ``_`` and ``-`` names one; OpenAPI has no patterned
    parameter names)."""
    schema = qsschema.candidates_schema(_NEWEST)
    grouped = {key: _STRING for key in qsschema.GROUP_KEYS}
    return {**grouped, **{f"{key}1": _STRING for key in grouped}, **schema["properties"]}


_CANDIDATES_QUERY = _candidates_query()

QUERIES: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = {
    ("GET", "/resource_providers"): qsschema.providers_schema(_NEWEST)["properties"],
    ("GET", "/allocation_candidates"): _CANDIDATES_QUERY,
    ("GET", "/allocation_candidates/explain"): _CANDIDATES_QUERY,
    ("GET", "/usages"): usage.QUERY_V1_38["properties"],
    ("GET", "/traits"): {
        # in:NAME,NAME or startswith:PREFIX
        "name": {"type": "string", "pattern": "^(in|startswith):"},
        "associated": {"enum": ["true", "false"]},
    },
}
# What a query must name: the project whose usages are asked for.
REQUIRED_QUERIES: Mapping[tuple[str, str], frozenset[str]] = {
    ("GET", "/usages"): frozenset(usage.QUERY_V1_38["required"]),
}

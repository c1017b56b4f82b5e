"""JSON schemas of the Image API's request bodies, checked before the handler runs (as Glance
checks a body against its image schema), and the check: a 400 in the API's error document.

An image's attributes are held to their columns; any other key is a property, a string of at
most 65,535 characters under a name of at most 255. Read-only and reserved attributes pass
here, for the domain to refuse with a 403 that names them (as Glance does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.common.openapi import Body, Reply
from berth.common.validation import MAX_INT, first_error, integer, string
from berth.image import errors, images
from berth.image.api import PATCH_MEDIA_TYPE, ImageRequest

_ATTRIBUTES: dict[str, Any] = {
    # A UUID, which the domain parses.
    "id": {"type": ["string", "null"]},
    "name": string(255, nullable=True),
    "visibility": {"enum": list(images.VISIBILITIES)},
    "min_ram": integer(0, MAX_INT, text=False),
    "min_disk": integer(0, MAX_INT, text=False),
    "disk_format": {"enum": [*images.DISK_FORMATS, None]},
    "container_format": {"enum": [*images.CONTAINER_FORMATS, None]},
    "owner": string(255, nullable=True),
    "protected": {"type": "boolean"},
    "os_hidden": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string"}},
    **{name: {} for name in sorted(images.READ_ONLY | images.RESERVED)},
}
PROPERTY_VALUE = string(65535)

CREATE: dict[str, Any] = {
    "type": "object",
    "properties": _ATTRIBUTES,
    "propertyNames": {"maxLength": 255},
    "additionalProperties": PROPERTY_VALUE,
}

# An update: JSON patch operations on one attribute or property each (its value is checked as
# a create's would be, by the domain, which knows what the path names).
PATCH: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"enum": ["add", "replace", "remove"]},
            "path": {"type": "string", "pattern": "^/[^/]+$", "maxLength": 256},
            "value": {},
        },
        "required": ["op", "path"],
    },
}


# Which body each write takes, in which media type.
BODIES: Mapping[tuple[str, str], Body] = {
    ("POST", "/v2/images"): Body(CREATE),
    ("PATCH", "/v2/images/{image_id}"): Body(PATCH, PATCH_MEDIA_TYPE),
}


def check_body(req: ImageRequest, body: Body) -> None:
    """BadRequest saying where and why, unless the request's body is valid against the
    schema. A body in another media type than a JSON patch's is the handler's to refuse (415),
    before its content matters."""
    if body.media_type != "application/json" and req.media_type != body.media_type:
        return
    invalid = first_error(req.json_body(), body.schema)
    if invalid is not None:
        raise errors.BadRequest(f"Invalid value for {invalid.field}: {invalid.reason}.")


# What the main operations answer (for the OpenAPI document): an image's attributes with their
# types; its properties are strings.
_STRING: dict[str, Any] = {"type": "string"}
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
IMAGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": _STRING,
        "name": _NULLABLE_STRING,
        "status": _STRING,
        "visibility": {"enum": list(images.VISIBILITIES)},
        "owner": _NULLABLE_STRING,
        "min_ram": {"type": "integer"},
        "min_disk": {"type": "integer"},
        "disk_format": _NULLABLE_STRING,
        "container_format": _NULLABLE_STRING,
        "size": {"type": ["integer", "null"]},
        "virtual_size": {"type": ["integer", "null"]},
        "checksum": _NULLABLE_STRING,
        "os_hash_algo": _NULLABLE_STRING,
        "os_hash_value": _NULLABLE_STRING,
        "created_at": _STRING,
        "updated_at": _STRING,
        "protected": {"type": "boolean"},
        "os_hidden": {"type": "boolean"},
        "tags": {"type": "array", "items": _STRING},
        "self": _STRING,
        "file": _STRING,
        "schema": _STRING,
    },
    "required": ["id", "status", "visibility", "self", "file", "schema"],
    "additionalProperties": _STRING,
}
IMAGES: dict[str, Any] = {
    "type": "object",
    "properties": {
        "images": {"type": "array", "items": IMAGE},
        "first": _STRING,
        "next": _STRING,
        "schema": _STRING,
    },
    "required": ["images", "first", "schema"],
}
_IMAGE = "/v2/images/{image_id}"
REPLIES: Mapping[tuple[str, str], Reply] = {
    ("GET", "/v2/images"): Reply(200, IMAGES),
    ("POST", "/v2/images"): Reply(201, IMAGE),
    ("GET", _IMAGE): Reply(200, IMAGE),
    ("PATCH", _IMAGE): Reply(200, IMAGE),
    ("DELETE", _IMAGE): Reply(204, None),
}
# A list's parameters; any other filters on the property of its name.
QUERIES: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = {
    ("GET", "/v2/images"): {
        "limit": {"type": "integer"},
        "marker": _STRING,
        "sort_key": _STRING,
        "sort_dir": {"enum": ["asc", "desc"]},
        "visibility": {"enum": [*images.VISIBILITIES, "all"]},
        "name": _STRING,
        "status": _STRING,
        "owner": _STRING,
        "id": _STRING,
        "disk_format": _STRING,
        "container_format": _STRING,
    }
}

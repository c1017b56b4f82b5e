"""The compute API's image proxy (Nova's ``/images``, removed at microversion 2.36): the Image
API's images in Nova's shapes, read and changed as the caller (its own credentials go to the
Image API, which decides what it may see and change).

GET    /images, /images/detail   name, status, server, type, minRam, minDisk, changes-since
                                 filters; limit and marker
GET    /images/{id}              {"image": {..., "minRam", "minDisk", "progress",
                                 "status": ACTIVE|SAVING|..., "OS-EXT-IMG-SIZE:size"}}
DELETE /images/{id}              204
GET, PUT, POST /images/{id}/metadata          the image's properties (PUT replaces them all)
GET, PUT, DELETE /images/{id}/metadata/{key}  one property
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute.api import paging
from berth.compute.api.request import ComputeRequest
from berth.compute.clients.http import ServiceUnavailable
from berth.compute.clients.image import ImageClient, ImageError

# The last microversion with the proxy.
LAST_VERSION = (2, 35)
# A Glance status as Nova shows it, and how far along the image is.
_STATUSES = {
    "active": "ACTIVE", "queued": "SAVING", "saving": "SAVING", "importing": "SAVING",
    "uploading": "SAVING", "deleted": "DELETED", "pending_delete": "DELETED", "killed": "ERROR",
}  # fmt: skip
_PROGRESS = {"queued": 25, "saving": 50, "active": 100}
# The Image API's attributes; every other key of its image is a property (Nova's metadata).
_ATTRIBUTES = frozenset(
    {
        "id", "name", "status", "visibility", "owner", "min_ram", "min_disk", "disk_format",
        "container_format", "size", "virtual_size", "checksum", "os_hash_algo", "os_hash_value",
        "created_at", "updated_at", "protected", "os_hidden", "tags", "self", "file", "schema",
        "direct_url", "locations", "stores",
    }
)  # fmt: skip
# Filters passed on to the Image API (as the name it knows), and the ones applied here.
_PASSED = {"name": "name", "server": "instance_uuid", "type": "image_type"}
_MINIMUMS = {"minRam": "min_ram", "minDisk": "min_disk"}


# Images


def index(req: ComputeRequest) -> Response:
    """``{"images": [{"id", "name", "links"}]}``"""
    images, links = _listed(req)
    brief = [{"id": i["id"], "name": i["name"], "links": _links(req, i["id"])} for i in images]
    return req.respond({"images": brief, **links})


def detail(req: ComputeRequest) -> Response:
    images, links = _listed(req)
    return req.respond({"images": [_view(req, image) for image in images], **links})


def show(req: ComputeRequest) -> Response:
    return req.respond({"image": _view(req, _image(req))})


def delete(req: ComputeRequest) -> Response:
    """``DELETE /images/{id}``; ``DELETE /images/`` (no id) is a 404, as Nova answers."""
    image_id = _proxied(req)
    if not image_id:
        raise exceptions.NotFound("Image  could not be found.")
    _ask(lambda images: images.delete(image_id, req.credentials), req, image_id)
    return req.no_content(204)


# Metadata


def list_metadata(req: ComputeRequest) -> Response:
    return req.respond({"metadata": _properties(_image(req))})


def replace_metadata(req: ComputeRequest) -> Response:
    """PUT: the properties become the body's (those not in it are removed)."""
    wanted = _metadata_body(req, "metadata")
    image = _image(req)
    current = _properties(image)
    operations = [{"op": "remove", "path": _path(key)} for key in current if key not in wanted]
    operations += _setting(current, wanted)
    return req.respond({"metadata": _properties(_update(req, image["id"], operations))})


def update_metadata(req: ComputeRequest) -> Response:
    """POST: the body's properties are added or changed, the others kept."""
    wanted = _metadata_body(req, "metadata")
    image = _image(req)
    changed = _update(req, image["id"], _setting(_properties(image), wanted))
    return req.respond({"metadata": _properties(changed)})


def show_metadata_item(req: ComputeRequest) -> Response:
    key = req.param("key")
    properties = _properties(_image(req))
    if key not in properties:
        raise exceptions.NotFound(f"Image {req.param('image_id')} has no metadata item {key}.")
    return req.respond({"meta": {key: properties[key]}})


def set_metadata_item(req: ComputeRequest) -> Response:
    key = req.param("key")
    wanted = _metadata_body(req, "meta")
    if len(wanted) != 1:
        raise exceptions.BadRequest("Request body contains too many items: one 'meta' item.")
    if key not in wanted:
        raise exceptions.BadRequest("Request body and URI mismatch")
    image = _image(req)
    _update(req, image["id"], _setting(_properties(image), wanted))
    return req.respond({"meta": wanted})


def delete_metadata_item(req: ComputeRequest) -> Response:
    key = req.param("key")
    image = _image(req)
    if key not in _properties(image):
        raise exceptions.NotFound(f"Image {image['id']} has no metadata item {key}.")
    _update(req, image["id"], [{"op": "remove", "path": _path(key)}])
    return req.no_content(204)


# Helpers


def _proxied(req: ComputeRequest) -> str:
    """The image id of a proxy request; from 2.36 the proxy is gone (404, as Nova)."""
    if req.at_least((LAST_VERSION[0], LAST_VERSION[1] + 1)):
        raise exceptions.NotFound("The resource could not be found.")
    return req.param("image_id") if "image_id" in req.path_params else ""


def _client(req: ComputeRequest) -> ImageClient:
    if req.service.images is None:
        raise exceptions.ServiceUnavailable("This compute API has no image service.")
    return req.service.images


def _ask(call: Any, req: ComputeRequest, image_id: str = "") -> Any:
    """One call to the Image API; its refusals become the compute API's."""
    try:
        return call(_client(req))
    except ImageError as exc:
        if exc.status == 404:
            raise exceptions.NotFound(f"Image {image_id} could not be found.") from None
        if exc.status == 403:
            raise exceptions.Forbidden(str(exc)) from None
        if exc.status == 409:
            raise exceptions.Conflict(str(exc)) from None
        if exc.status == 413:
            raise exceptions.OverLimit(str(exc)) from None
        raise exceptions.BadRequest(str(exc)) from None
    except ServiceUnavailable as exc:
        raise exceptions.ServiceUnavailable(f"The image service is unavailable: {exc}") from None


def _image(req: ComputeRequest) -> dict[str, Any]:
    image_id = _proxied(req)
    return _ask(lambda images: images.image(image_id, req.credentials), req, image_id)  # type: ignore[no-any-return]


def _update(req: ComputeRequest, image_id: str, operations: list[dict[str, Any]]) -> dict[str, Any]:
    if not operations:
        return _image(req)
    return _ask(  # type: ignore[no-any-return]
        lambda images: images.update(image_id, operations, req.credentials), req, image_id
    )


def _listed(req: ComputeRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The caller's images that pass the filters, one page of them, and the page's links."""
    _proxied(req)
    page = paging.parse(req)
    since = paging.changes_since(req)
    query = dict(req.query_items)
    passed = [(_PASSED[name], _server_id(value) if name == "server" else value)
              for name, value in req.query_items if name in _PASSED]  # fmt: skip
    if "status" in query:
        passed.append(("status", query["status"].lower()))
    minimums = {_MINIMUMS[name]: _minimum(name, value) for name, value in query.items()
                if name in _MINIMUMS}  # fmt: skip
    found: list[dict[str, Any]] = []
    marker: list[tuple[str, str]] = []
    while True:
        params = [*passed, ("limit", "1000"), *marker]
        answer = _ask(lambda images, params=params: images.images(params, req.credentials), req)
        found += answer["images"]
        if not answer.get("next"):
            break
        marker = [("marker", str(answer["images"][-1]["id"]))]
    kept = [
        image for image in found
        if all(image[name] >= least for name, least in minimums.items())
        and (since is None or _time(image["updated_at"]) >= since.isoformat())
    ]  # fmt: skip
    shown = paging.after_marker(kept, page, lambda image: str(image["id"]))
    last = str(shown[-1]["id"]) if shown else None
    return shown, paging.links(req, "images", shown, page, last)


def _view(req: ComputeRequest, image: Mapping[str, Any]) -> dict[str, Any]:
    properties = _properties(image)
    view: dict[str, Any] = {
        "id": image["id"],
        "name": image["name"],
        "minRam": image["min_ram"],
        "minDisk": image["min_disk"],
        "metadata": properties,
        "created": image["created_at"],
        "updated": image["updated_at"],
        "status": _STATUSES.get(image["status"], "UNKNOWN"),
        "progress": _PROGRESS.get(image["status"], 0),
        "links": _links(req, image["id"]),
        "OS-EXT-IMG-SIZE:size": image["size"],
    }
    server = properties.get("instance_uuid")
    if server:
        view["server"] = {
            "id": server,
            "links": [
                {"rel": "self", "href": f"{req.base_url}/v2.1/servers/{server}"},
                {"rel": "bookmark", "href": f"{req.base_url}/servers/{server}"},
            ],
        }
    return view


def _properties(image: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in image.items() if key not in _ATTRIBUTES}


def _metadata_body(req: ComputeRequest, key: str) -> dict[str, str]:
    body = req.json_body()
    metadata = body.get(key) if isinstance(body, dict) else None
    if not isinstance(metadata, dict):
        raise exceptions.BadRequest(f"Malformed request body: a JSON object under '{key}'.")
    for name, value in metadata.items():
        if not 1 <= len(name) <= 255 or not isinstance(value, str) or len(value) > 255:
            raise exceptions.BadRequest(
                f"Invalid metadata item {name!r}: keys and values are strings of up to 255 "
                "characters."
            )
    return metadata


def _setting(current: Mapping[str, Any], wanted: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {"op": "replace" if key in current else "add", "path": _path(key), "value": value}
        for key, value in wanted.items()
        if current.get(key) != value
    ]


def _path(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _links(req: ComputeRequest, image_id: str) -> list[dict[str, str]]:
    return [
        {"rel": "self", "href": f"{req.base_url}/v2.1/images/{image_id}"},
        {"rel": "bookmark", "href": f"{req.base_url}/images/{image_id}"},
    ]


def _server_id(value: str) -> str:
    """A server filter is its id or a link to it (the id is the link's last segment)."""
    return value.rstrip("/").rsplit("/", 1)[-1]


def _minimum(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise exceptions.BadRequest(f"Invalid {name} filter {value!r}: an integer.") from None


def _time(value: str) -> str:
    """An Image API time ("2026-11-26T17:09:06Z") comparable with ``isoformat()``."""
    return value.removesuffix("Z")

"""The Image v2 API's handlers and route table.

GET    /, /versions                 the version document (``/`` answers 300, as Glance does)
GET    /v2/images                   name, status, visibility and property filters;
                                    sort_key/sort_dir; limit/marker with "first" and "next"
POST   /v2/images                   201 with the image, queued until its data arrives
GET    /v2/images/{image_id}
PATCH  /v2/images/{image_id}        application/openstack-images-v2.1-json-patch
DELETE /v2/images/{image_id}        204, its data with it
PUT    /v2/images/{image_id}/file   application/octet-stream, streamed to the data store: 204
GET    /v2/images/{image_id}/file   the data (a Range of it: 206); 204 for an image without
POST   /v2/images/{image_id}/actions/deactivate, .../reactivate   204
GET    /v2/images/{image_id}/tasks  {"tasks": []}: Berth runs no import tasks
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import orjson
from sqlalchemy.engine import Connection, RowMapping
from starlette.responses import Response, StreamingResponse

from berth.common.body import MalformedBody, parse_json
from berth.common.context import RequestContext
from berth.common.db import Database
from berth.compute.db import images as store
from berth.compute.db.errors import Duplicate
from berth.image import data, errors, images

JSON = "application/json"
OCTET_STREAM = "application/octet-stream"
PATCH_MEDIA_TYPE = "application/openstack-images-v2.1-json-patch"
# A page's length when the request gives none, and at most (Glance's defaults).
DEFAULT_LIMIT = 25
MAX_LIMIT = 1000
# Supported versions, oldest first; the last is current.
VERSIONS = ("v2.0", "v2.1", "v2.2", "v2.3", "v2.4", "v2.5")

_LIST_PARAMS = {"limit", "marker", "sort_key", "sort_dir", "visibility"}
_SORT_KEYS = {
    "name", "status", "visibility", "created_at", "updated_at", "id", "min_disk", "min_ram",
    "size", "disk_format", "container_format", "owner",
}  # fmt: skip
# Filters on columns; any other query parameter filters on the property of that name.
_COLUMN_FILTERS = {"name", "status", "owner", "disk_format", "container_format", "id"}


@dataclass
class ImageRequest:
    method: str
    path: str
    path_params: dict[str, str]
    query_items: list[tuple[str, str]]
    headers: Mapping[str, str]
    body: bytes
    context: RequestContext
    db: Database
    store: data.DataStore
    # The largest image data an upload may bring (Glance's image_size_cap).
    size_cap: int
    # The URL of the API's root ("http://host:9292" or "http://host/image").
    base_url: str = ""
    # The body of an upload as it arrives (``body`` is then empty).
    chunks: Iterator[bytes] = field(default_factory=lambda: iter(()))
    # The body as JSON once read (the schema check reads it before the handler does).
    _parsed: Any = field(default=None, init=False, repr=False)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip()

    @property
    def caller(self) -> images.Caller:
        is_admin = self.context.is_admin or self.context.has_role("service")
        return images.Caller(project_id=self.context.project_id or "", is_admin=is_admin)

    def param(self, name: str) -> str:
        return self.path_params[name]

    def json_body(self) -> Any:
        if self._parsed is None:
            if not self.body:
                raise errors.BadRequest("The request has no body; a JSON document was expected.")
            try:
                self._parsed = parse_json(self.body)
            except MalformedBody as exc:
                raise errors.BadRequest(f"Malformed JSON in request body: {exc}") from None
        return self._parsed

    def respond(self, body: Any, status: int = 200) -> Response:
        return Response(dumps(body), status_code=status, media_type=JSON)


def dumps(body: Any) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z)


# Versions


def versions(req: ImageRequest) -> Response:
    """``{"versions": [{"id": "v2.5", "status": "CURRENT", "links": [...]}, ...]}``"""
    listed = [
        {
            "id": version,
            "status": "CURRENT" if version == VERSIONS[-1] else "SUPPORTED",
            "links": [{"rel": "self", "href": f"{req.base_url}/v2/"}],
        }
        for version in reversed(VERSIONS)
    ]
    return req.respond({"versions": listed}, 300 if req.path == "/" else 200)


# Images


def list_images(req: ImageRequest) -> Response:
    """``{"images": [...], "first": "/v2/images?...", "schema": "/v2/schemas/images",
    "next": "/v2/images?marker=...&..."}`` (``next`` while more remain)."""
    params = dict(req.query_items)
    limit = _limit(params.get("limit"))
    sort_key = params.get("sort_key", "created_at")
    sort_dir = params.get("sort_dir", "desc")
    if sort_key not in _SORT_KEYS:
        raise errors.BadRequest(f"Invalid sort key: {sort_key}")
    if sort_dir not in ("asc", "desc"):
        raise errors.BadRequest(f"Invalid sort direction: {sort_dir}")
    with req.db.read() as conn:
        found = store.list_images(conn)
    shown = images.listed(found, req.caller, params.get("visibility"))
    shown = [image for image in shown if _matches(image, params)]
    shown = sorted(shown, key=lambda image: image["id"])
    shown = sorted(shown, key=lambda image: _sortable(image[sort_key]), reverse=sort_dir == "desc")
    start = 0
    marker = params.get("marker")
    if marker is not None:
        at = next((i for i, image in enumerate(shown) if image["id"] == marker), None)
        if at is None:
            raise errors.BadRequest(f"Invalid marker. Image {marker} could not be found.")
        start = at + 1
    page = shown[start : start + limit]
    kept = [(name, value) for name, value in req.query_items if name != "marker"]
    body: dict[str, Any] = {
        "images": [_transform_image(image) for image in page],
        "first": "/v2/images" + (f"?{urlencode(kept)}" if kept else ""),
        "schema": "/v2/schemas/images",
    }
    if page and start + limit < len(shown):
        more = [*kept, ("marker", page[-1]["id"])]
        if "limit" not in params:
            more.append(("limit", str(limit)))
        body["next"] = f"/v2/images?{urlencode(more)}"
    return req.respond(body)


def create_image(req: ImageRequest) -> Response:
    image_id, values = images.new_image(req.json_body(), req.caller)
    with req.db.write() as conn:
        try:
            image = store.create(conn, image_id, values)
        except Duplicate:
            raise errors.Conflict(f"Image with identifier {image_id} already exists!") from None
    return req.respond(_transform_image(image), 201)


def show_image(req: ImageRequest) -> Response:
    with req.db.read() as conn:
        image = _visible(req, _image(conn, req.param("image_id")))
    return req.respond(_transform_image(image))


def update_image(req: ImageRequest) -> Response:
    media_type = req.media_type
    if media_type != PATCH_MEDIA_TYPE:
        raise errors.UnsupportedMediaType(
            f"Unsupported Content-Type {media_type or 'none'}: use {PATCH_MEDIA_TYPE}."
        )
    operations = req.json_body()
    image_id = req.param("image_id")
    with req.db.write() as conn:
        image = _changeable(req, _image(conn, image_id))
        store.update(conn, image_id, images.patched(image, operations, req.caller))
        changed = store.get(conn, image_id)
    assert changed is not None
    return req.respond(_transform_image(changed))


def delete_image(req: ImageRequest) -> Response:
    image_id = req.param("image_id")
    with req.db.write() as conn:
        _changeable(req, _image(conn, image_id))
        store.delete(conn, image_id)
    # After the row: an upload still under way finds the image gone and forgets what it wrote.
    req.store.delete(image_id)
    return Response(status_code=204)


# Data


def upload_data(req: ImageRequest) -> Response:
    """The body, streamed to the data store: ``queued`` -> ``saving`` -> ``active`` with its
    size and digests; back to ``queued`` when the upload fails (413 past the size cap)."""
    media_type = req.headers.get("content-type", "").split(";")[0].strip()
    if media_type != OCTET_STREAM:
        raise errors.UnsupportedMediaType(
            f"Unsupported Content-Type {media_type or 'none'}: image data is {OCTET_STREAM}."
        )
    image_id = req.param("image_id")
    with req.db.write() as conn:
        image = _changeable(req, _image(conn, image_id))
        images.check_upload(image)
        if not store.update_if(conn, image_id, ("queued",), {"status": "saving"}):
            raise errors.Conflict(f"Image {image_id} is being uploaded by another request.")
    try:
        written = req.store.write(image_id, req.chunks, req.size_cap)
    except BaseException:
        with req.db.write() as conn:
            store.update_if(conn, image_id, ("saving",), {"status": "queued"})
        raise
    properties = {
        **(image["properties"] or {}),
        "checksum": written.checksum,
        "os_hash_algo": data.HASH_ALGO,
        "os_hash_value": written.os_hash_value,
    }
    with req.db.write() as conn:
        kept = store.update_if(
            conn,
            image_id,
            ("saving",),
            {"status": "active", "size": written.size, "properties": properties},
        )
    if not kept:
        req.store.delete(image_id)
        raise errors.Gone(f"Image {image_id} was deleted while its data was being uploaded.")
    return Response(status_code=204)


def download_data(req: ImageRequest) -> Response:
    """The data with its length and md5 (``Content-MD5``, hex as Glance sends it); one range of
    it for ``Range: bytes=first-last`` (206). An image without data: 204."""
    with req.db.read() as conn:
        image = _visible(req, _image(conn, req.param("image_id")))
    images.check_download(image, req.caller)
    size = image["size"]
    if image["status"] not in ("active", "deactivated") or size is None:
        return Response(status_code=204)
    first, last = _range(req.headers.get("range"), size)
    try:
        chunks = req.store.read(image["id"], first, last + 1)
    except FileNotFoundError:
        # Registered with a size but no data (an image made by metadata alone).
        return Response(status_code=204)
    headers = {"content-length": str(last + 1 - first)}
    checksum = images.digests(image)["checksum"]
    if checksum:
        headers["content-md5"] = checksum
    if req.headers.get("range") is None:
        return StreamingResponse(chunks, 200, headers, OCTET_STREAM)
    headers["content-range"] = f"bytes {first}-{last}/{size}"
    return StreamingResponse(chunks, 206, headers, OCTET_STREAM)


def deactivate(req: ImageRequest) -> Response:
    return _set_status(req, images.deactivated)


def reactivate(req: ImageRequest) -> Response:
    return _set_status(req, images.reactivated)


def image_tasks(req: ImageRequest) -> Response:
    """Glance lists the import tasks run on an image; Berth runs none."""
    with req.db.read() as conn:
        _visible(req, _image(conn, req.param("image_id")))
    return req.respond({"tasks": []})


# Helpers


def _set_status(req: ImageRequest, status_after: Callable[[Mapping[str, Any]], str]) -> Response:
    image_id = req.param("image_id")
    with req.db.write() as conn:
        image = _changeable(req, _image(conn, image_id))
        store.update(conn, image_id, {"status": status_after(image)})
    return Response(status_code=204)


_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def _range(header: str | None, size: int) -> tuple[int, int]:
    """The first and last byte a Range header asks for (all of them without one); 416 for a
    range past the end, or of several parts."""
    if header is None:
        return 0, size - 1
    match = _RANGE.fullmatch(header.strip())
    if match is None or match.groups() == ("", ""):
        raise errors.RangeNotSatisfiable(f"Invalid Range header {header!r}: bytes=first-last.")
    first, last = match.groups()
    if first == "":
        start, end = max(size - int(last), 0), size - 1
    else:
        start, end = int(first), size - 1 if last == "" else min(int(last), size - 1)
    if start > end or start >= size:
        raise errors.RangeNotSatisfiable(
            f"Range {header!r} is not within the image's {size} bytes."
        )
    return start, end


def _image(conn: Connection, image_id: str) -> RowMapping | None:
    return store.get(conn, image_id) if len(image_id) <= 36 else None


def _visible(req: ImageRequest, image: RowMapping | None) -> RowMapping:
    if image is None or not images.may_see(image, req.caller):
        raise errors.NotFound(f"No image found with ID {req.param('image_id')}")
    return image


def _changeable(req: ImageRequest, image: RowMapping | None) -> RowMapping:
    found = _visible(req, image)
    if not images.may_change(found, req.caller):
        raise errors.Forbidden(f"You are not permitted to modify image {found['id']}.")
    return found


def _limit(value: str | None) -> int:
    if value is None:
        return DEFAULT_LIMIT
    try:
        limit = int(value)
    except ValueError:
        raise errors.BadRequest("limit param must be an integer") from None
    if limit < 0:
        raise errors.BadRequest("limit param must be positive")
    return min(limit, MAX_LIMIT)


def _matches(image: Mapping[str, Any], params: Mapping[str, str]) -> bool:
    properties = image["properties"] or {}
    for name, wanted in params.items():
        if name in _LIST_PARAMS:
            continue
        if name in _COLUMN_FILTERS:
            # Glance's "in:" operator: any of a comma-separated list (the CLI asks for the images
            # of a server list by id this way).
            accepted = wanted[3:].split(",") if wanted.startswith("in:") else [wanted]
            if str(image[name]) not in accepted:
                return False
        elif properties.get(name) != wanted:
            return False
    return True


def _sortable(value: Any) -> tuple[bool, Any]:
    return (value is not None, value if value is not None else 0)


def _transform_image(image: Mapping[str, Any]) -> dict[str, Any]:
    """``{"id", "name", "status": "active", "visibility", "owner", "min_ram", "min_disk",
    "disk_format", "container_format", "size", "created_at", "updated_at", "tags": [],
    "protected": false, "os_hidden": false, "self", "file", "schema", ...properties}``"""
    image_id = image["id"]
    return {
        **images.user_properties(image),
        "id": image_id,
        "name": image["name"] or None,
        "status": image["status"],
        "visibility": image["visibility"],
        "owner": image["owner"] or None,
        "min_ram": image["min_ram"],
        "min_disk": image["min_disk"],
        "disk_format": image["disk_format"],
        "container_format": image["container_format"],
        "size": image["size"],
        "virtual_size": None,
        **images.digests(image),
        "created_at": image["created_at"],
        "updated_at": image["updated_at"] or image["created_at"],
        **images.FIXED,
        "self": f"/v2/images/{image_id}",
        "file": f"/v2/images/{image_id}/file",
        "schema": "/v2/schemas/image",
    }


Handler = Callable[[ImageRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": versions},
    "/versions": {"GET": versions},
    "/v2/images": {"GET": list_images, "POST": create_image},
    "/v2/images/{image_id}": {"GET": show_image, "PATCH": update_image, "DELETE": delete_image},
    "/v2/images/{image_id}/file": {"GET": download_data, "PUT": upload_data},
    "/v2/images/{image_id}/actions/deactivate": {"POST": deactivate},
    "/v2/images/{image_id}/actions/reactivate": {"POST": reactivate},
    "/v2/images/{image_id}/tasks": {"GET": image_tasks},
}
# Handlers that read the body as it arrives (``ImageRequest.chunks``).
STREAMED: frozenset[Handler] = frozenset({upload_data})

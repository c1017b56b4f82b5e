"""Every failure becomes the API's JSON error document, in one place, so handlers have no try/except.

    {"errors": [{"status": 404, "title": "Not Found", "detail": "...",
                 "request_id": "req-...", "code": "placement.resource_provider.not_found"}]}

``code`` appears from microversion 1.23.
"""

from __future__ import annotations

import html
import logging
from http import HTTPStatus

import orjson
from starlette.responses import Response

from berth.common.auth import IdentityUnavailable
from berth.common.body import BodyTooLarge
from berth.common.db import UNAVAILABLE, is_unavailable, is_unstorable
from berth.placement import errors, exceptions
from berth.placement.api.request import JSON, HTTPError, accepts_json
from berth.placement.microversion import Version

LOG = logging.getLogger(__name__)

# Domain refusals and the status each is answered with; the most specific class wins.
STATUS_OF: list[tuple[type[exceptions.PlacementError], int]] = [
    (exceptions.NotFound, 404),
    (exceptions.Conflict, 409),
    (exceptions.InvalidInput, 400),
    (exceptions.Forbidden, 403),
]


def from_exception(exc: Exception) -> HTTPError:
    if isinstance(exc, HTTPError):
        return exc
    if isinstance(exc, BodyTooLarge):
        return HTTPError(413, str(exc))
    if is_unstorable(exc):
        # A value the database cannot hold (a NUL byte in a string on PostgreSQL, a number out
        # of its column's range) is the request's fault, whatever validation let through.
        LOG.info("refused a value the database cannot store: %s", getattr(exc, "orig", exc))
        return HTTPError(400, "The request holds a value the database cannot store.")
    if is_unavailable(exc):
        return HTTPError(503, UNAVAILABLE)
    if isinstance(exc, IdentityUnavailable):
        return HTTPError(503, str(exc))
    if isinstance(exc, exceptions.PlacementError):
        for cls, status in STATUS_OF:
            if isinstance(exc, cls):
                return HTTPError(status, str(exc), exc.code)
    return HTTPError(500, "An unexpected error occurred; the server log has the details.")


def error_response(
    error: HTTPError, request_id: str, version: Version | None, accept: str | None
) -> Response:
    title = HTTPStatus(error.status).phrase
    headers = dict(error.headers)
    if not accepts_json(accept) and "text/html" in (accept or ""):
        page = f"<html><head><title>{error.status} {title}</title></head><body><h1>{title}</h1>"
        page += f"<p>{html.escape(error.detail)}</p></body></html>"
        return Response(page, status_code=error.status, headers=headers, media_type="text/html")
    item: dict[str, object] = {
        "status": error.status,
        "title": title,
        "detail": error.detail,
        "request_id": request_id,
    }
    if version is not None and version.matches((1, 23)):
        item["code"] = error.code or errors.DEFAULT
    return Response(
        orjson.dumps({"errors": [item]}),
        status_code=error.status,
        headers=headers,
        media_type=JSON,
    )

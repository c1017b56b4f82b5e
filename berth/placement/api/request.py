"""What a handler sees of an HTTP request, and the HTTP-level errors it can raise.

Handlers are plain synchronous functions ``handler(req: PlacementRequest) -> Response`` that run in a
worker thread. Every handler follows the same steps: ``req.authorize(rule)``; pick the schema for
``req.version``; ``req.json_body(schema)`` or ``req.query(schema)``; call the domain with ``req.db``;
answer with ``req.respond(...)``.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jsonschema
import orjson
from sqlalchemy.engine import Connection
from starlette.responses import Response

from berth.common.body import MalformedBody, parse_json
from berth.common.context import RequestContext
from berth.common.timeutils import http_date, utcnow
from berth.common.validation import cached_validator
from berth.placement import errors
from berth.placement.api.acceptor import Accept, acceptor
from berth.placement.microversion import Version

if TYPE_CHECKING:
    from berth.placement.service import PlacementService

JSON = "application/json"
NOT_FOUND = "The resource could not be found."


class HTTPError(Exception):
    """An error answered in the API's error document; ``code`` is shown from 1.23."""

    def __init__(
        self,
        status: int,
        detail: str,
        code: str = errors.DEFAULT,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code
        self.headers = dict(headers or {})


@dataclass
class PlacementRequest:
    """One API request, after authentication and microversion negotiation."""

    method: str
    path: str
    path_params: dict[str, str]
    query_items: list[tuple[str, str]]
    headers: Mapping[str, str]
    body: bytes
    version: Version
    context: RequestContext
    service: PlacementService
    # The service's URL, for absolute locations (made when asked: few answers need it).
    base_url: Callable[[], str] = lambda: ""

    # -- identity and policy ------------------------------------------------------------------

    def authorize(self, rule: str, target: dict[str, Any] | None = None) -> None:
        self.service.policy.authorize(self.context, rule, target)

    def require_version(
        self, minimum: tuple[int, int], maximum: tuple[int, int] | None = None
    ) -> None:
        """Answer as if the endpoint were not there outside its microversions (upstream's 404,
        by which clients probe for features)."""
        if not self.version.matches(minimum, maximum):
            raise HTTPError(404, NOT_FOUND)

    # -- storage --------------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.service.db.read() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self.service.db.write() as conn:
            yield conn

    # -- input ----------------------------------------------------------------------------------

    def json_body(self, schema: Mapping[str, Any] | None = None) -> Any:
        """The request body as JSON, validated against ``schema``; 400/415 when it is not."""
        self.check_json_media_type()
        try:
            data = parse_json(self.body)
        except MalformedBody as exc:
            raise HTTPError(400, f"Malformed JSON: {exc}") from None
        if schema is not None:
            validate(data, schema)
        return data

    def check_json_media_type(self) -> None:
        """A body must be declared as JSON: 415 for another media type, 400 for none."""
        content_type = self.headers.get("content-type")
        if not self.body and not content_type:
            raise HTTPError(415, "The media type None is not supported, use application/json")
        if not content_type:
            raise HTTPError(400, "content-type header required when the request has a body")
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type != JSON:
            raise HTTPError(
                415, f"The media type {media_type} is not supported, use application/json"
            )

    def query(self, schema: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Query parameters as a dict of single values, validated against ``schema``.

        A parameter given twice where only one is meaningful is a 400 with
        ``placement.query.duplicate_key``; handlers that accept repeats read ``query_items``.
        """
        params: dict[str, str] = {}
        for key, value in self.query_items:
            if key in params:
                raise HTTPError(
                    400,
                    f"Query parameter {key!r} may be given only once.",
                    errors.ILLEGAL_DUPLICATE_QUERYPARAM,
                )
            params[key] = value
        if schema is not None:
            validate(params, schema, what="Invalid query string parameters")
        return params

    def accepts_json(self) -> bool:
        return accepts_json(self.headers.get("accept"))

    # -- output ---------------------------------------------------------------------------------

    def respond(
        self,
        body: Any = None,
        status: int = 200,
        last_modified: dt.datetime | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        """A JSON response (``body`` as data, or already serialised by ``dumps``); from 1.15 a GET
        or a write returning a body carries cache headers."""
        out = dict(headers or {})
        if out.get("location", "").startswith("/"):
            # Absolute, as clients of the OpenStack APIs have always been given it.
            out["location"] = self.base_url().rstrip("/") + out["location"]
        if body is not None and self.version.matches((1, 15)):
            out["cache-control"] = "no-cache"
            out["last-modified"] = http_date(last_modified or utcnow())
        if body is None:
            return Response(status_code=status, headers=out)
        content = body if isinstance(body, bytes) else dumps(body)
        return Response(content, status_code=status, headers=out, media_type=JSON)

    def no_content(self) -> Response:
        return Response(status_code=204)


def dumps(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:
        # orjson stops at 64-bit integers; a capacity with a huge allocation ratio goes past.
        return json.dumps(body).encode()


def requires_json(
    handler: Callable[[PlacementRequest], Response], since: tuple[int, int] = (1, 0)
) -> Callable[[PlacementRequest], Response]:
    """A handler whose request carries a JSON body: its media type is checked first, before
    policy or lookups, so a client sending the wrong thing learns that whatever else is wrong.
    Only an endpoint that does not exist yet at the request's microversion (``since``) answers
    its 404 before that."""

    @functools.wraps(handler)
    def checked(req: PlacementRequest) -> Response:
        req.require_version(since)
        req.check_json_media_type()
        return handler(req)

    return checked


def validate(data: Any, schema: Mapping[str, Any], what: str = "JSON does not validate") -> None:
    validator, accept = cached_validator(schema, _checks)
    if accept is not None and accept(data):
        return
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        # The full text names the failing keyword ("Failed validating 'pattern' in ..."),
        # which clients and upstream's tests match on.
        raise HTTPError(400, f"{what}: {error}")


def _checks(schema: Mapping[str, Any]) -> tuple[jsonschema.protocols.Validator, Accept | None]:
    """Placement's schemas are draft 7, as upstream's, with formats (a uuid) checked; the
    acceptor says yes to a valid body quickly, the validator finds and words what is wrong."""
    formats = jsonschema.FormatChecker()
    return jsonschema.Draft7Validator(schema, format_checker=formats), acceptor(schema, formats)


def accepts_json(accept: str | None) -> bool:
    """True when an Accept header admits application/json (absent means anything)."""
    if not accept:
        return True
    for part in accept.split(","):
        media = part.split(";", 1)[0].strip().lower()
        if media in (JSON, "application/*", "*/*"):
            return True
    return False

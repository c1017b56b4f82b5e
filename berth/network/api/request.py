"""What a handler sees of an HTTP request.

Handlers are plain synchronous functions ``handler(req: NetworkRequest) -> Response`` run in a
worker thread: they read the body or the query, call the domain with a connection from ``req.db``,
and answer with ``req.respond``. Refusals are raised as ``berth.network.exceptions`` and turned
into ``NeutronError`` documents in one place (``faults``).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from berth.common.body import MalformedBody, parse_json
from berth.common.context import RequestContext
from berth.common.validation import first_error
from berth.network import exceptions, policy

if TYPE_CHECKING:
    from berth.network.service import NetworkService

JSON = "application/json"


@dataclass
class NetworkRequest:
    method: str
    path: str
    path_params: dict[str, str]
    query_items: list[tuple[str, str]]
    body: bytes
    context: RequestContext
    service: NetworkService
    # The URL of the API's root, for pagination links ("http://host:9696").
    base_url: str = ""
    # The body as JSON once read (the schema check reads it before the handler does).
    _parsed: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        # The caller as the policy judges it: with the service's enforce_* settings.
        self.context = policy.judged_under(self.context, self.service.settings)

    @property
    def visible_to(self) -> str | None:
        """Whose resources a listing shows besides shared ones (None: everyone's)."""
        return policy.visible_to(self.context)

    @property
    def project_id(self) -> str:
        return self.context.project_id or ""

    def param(self, name: str) -> str:
        return self.path_params[name]

    def json_body(self) -> Any:
        if self._parsed is None:
            if not self.body:
                raise exceptions.BadRequest(
                    "The request has no body; a JSON document was expected."
                )
            try:
                self._parsed = parse_json(self.body)
            except MalformedBody as exc:
                raise exceptions.BadRequest(f"Malformed JSON in request body: {exc}") from None
        return self._parsed

    def resource_body(self, key: str) -> dict[str, Any]:
        """The object under ``key`` of a ``{"network": {...}}`` style body."""
        return _member(self.json_body(), key)

    def resource_bodies(self, key: str, collection: str) -> tuple[list[dict[str, Any]], bool]:
        """The objects of a create: ``{"network": {...}}``, or the bulk form ``{"networks":
        [{...}, ...]}``; and whether it was the bulk form."""
        body = self.json_body()
        if isinstance(body, dict) and collection in body and key not in body:
            items = body[collection]
            if (
                not isinstance(items, list)
                or not items
                or not all(isinstance(item, dict) for item in items)
            ):
                raise exceptions.BadRequest(
                    f"Resources required: a non-empty list of JSON objects under '{collection}'."
                )
            return [dict(item) for item in items], True
        return [_member(body, key)], False

    def respond(self, body: Any, status: int = 200) -> Response:
        return Response(dumps(body), status_code=status, media_type=JSON)

    def no_content(self) -> Response:
        return Response(status_code=204)


def check_body(req: NetworkRequest, schema: Mapping[str, Any]) -> None:
    """Unless the request's body is valid against ``schema``: InvalidInput naming the attribute
    and why, as Neutron words it, or BadRequest when the body is not a resource at all."""
    invalid = first_error(req.json_body(), schema)
    if invalid is None:
        return
    if not any(isinstance(key, str) for key in invalid.path[1:]):
        raise exceptions.BadRequest(f"Invalid resource body: {invalid.reason}.")
    raise exceptions.InvalidInput(
        f"Invalid input for {invalid.attribute}. Reason: {invalid.reason}."
    )


def _member(body: Any, key: str) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get(key), dict):
        raise exceptions.BadRequest(f"Resource body required: a JSON object under '{key}'.")
    return dict(body[key])


def dumps(body: Any) -> bytes:
    # Stored times are naive UTC to the second: shown as "2026-11-23T08:57:27Z".
    try:
        return orjson.dumps(body, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z)
    except TypeError:
        # orjson stops at 64-bit integers; an IPv6 subnet's address count goes past them.
        return json.dumps(body, default=_timestamp, separators=(",", ":")).encode()


def _timestamp(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def refusal_document(error: exceptions.NetworkServiceError) -> Mapping[str, Any]:
    return {"NeutronError": {"type": error.type, "message": str(error), "detail": ""}}

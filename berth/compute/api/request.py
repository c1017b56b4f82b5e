"""What a compute handler sees of an HTTP request (see ``berth.network.api.request`` for the
same shape): read the body or the query, call the domain, answer with ``respond``. Refusals are
``berth.compute.exceptions``, answered in one place (``app``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response

from berth.common.body import MalformedBody, parse_json
from berth.common.context import RequestContext
from berth.common.validation import first_error, may_be_absent
from berth.compute import exceptions
from berth.compute.api import schemas
from berth.compute.api.microversion import Version

if TYPE_CHECKING:
    from berth.compute.service import ComputeService

JSON = "application/json"


@dataclass
class ComputeRequest:
    method: str
    path: str
    path_params: dict[str, str]
    query_items: list[tuple[str, str]]
    body: bytes
    context: RequestContext
    version: Version
    service: ComputeService
    base_url: str = ""
    # The caller's credential headers, to call the Image API as the caller (the /images proxy).
    credentials: Mapping[str, str] = field(default_factory=dict)
    # The body as JSON once read (the schema check reads it before the handler does).
    _parsed: Any = field(default=None, init=False, repr=False)

    @property
    def is_admin(self) -> bool:
        """Admin in upstream's ``context.is_admin`` sense (flavor visibility), not a policy rule."""
        return self.context.is_admin or self.context.has_role("service")

    def authorize(self, rule: str, target: dict[str, Any] | None = None) -> None:
        """Raise ``Forbidden`` unless the policy rule ``rule`` (``os_compute_api:...``) allows
        the caller on ``target`` (default: the caller's own project and user)."""
        self.service.policy.authorize(self.context, rule, target)

    def allowed(self, rule: str, target: dict[str, Any] | None = None) -> bool:
        """Whether ``rule`` allows the caller, for what a handler shows or hides (no refusal)."""
        return self.service.policy.check(self.context, rule, target)

    @property
    def project_id(self) -> str:
        return self.context.project_id or ""

    def param(self, name: str) -> str:
        return self.path_params[name]

    def at_least(self, version: tuple[int, int]) -> bool:
        return self.version.matches(version)

    def json_body(self, schema: Mapping[str, Any] | None = None) -> Any:
        """The body as JSON, valid against ``schema`` when one is given (a write without an entry
        in ``schemas.bodies.BODIES``); BadRequest when there is none or it is not JSON."""
        if self._parsed is None:
            if not self.body:
                raise exceptions.BadRequest(
                    "The request has no body; a JSON document was expected."
                )
            try:
                self._parsed = parse_json(self.body)
            except MalformedBody as exc:
                raise exceptions.BadRequest(f"Malformed request body: {exc}") from None
        if schema is not None:
            validate(self._parsed, schema)
        return self._parsed

    def resource_body(self, key: str) -> dict[str, Any]:
        body = self.json_body()
        if not isinstance(body, dict) or not isinstance(body.get(key), dict):
            raise exceptions.BadRequest(f"Invalid input: a JSON object under '{key}' is required.")
        return dict(body[key])

    def respond(
        self, body: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> Response:
        return Response(dumps(body), status_code=status, media_type=JSON, headers=headers)

    def no_content(self, status: int = 204) -> Response:
        return Response(status_code=status)


def dumps(body: Any) -> bytes:
    # Stored times are naive UTC to the second: shown as "2026-11-23T08:57:27Z".
    return orjson.dumps(body, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z)


def error_document(error: exceptions.ComputeError) -> dict[str, Any]:
    return {error.key: {"code": error.status, "message": str(error)}}


def check_body(req: ComputeRequest, by_version: schemas.ByVersion) -> None:
    """The request's body held to its microversion's schema, before the handler runs."""
    schema = schemas.pick(by_version, req.version)
    if schema is None:
        return
    if not req.body and may_be_absent(schema):
        return  # a body that may be left out, as its schema takes null
    validate(req.json_body(), schema)


def validate(body: Any, schema: Mapping[str, Any]) -> None:
    """BadRequest naming the field and what is wrong with it, as Nova words it, unless ``body``
    is valid against ``schema``."""
    invalid = first_error(body, schema)
    if invalid is not None:
        raise exceptions.BadRequest(
            f"Invalid input for field/attribute {invalid.field}. Value: {invalid.shown}. "
            f"{invalid.reason}"
        )

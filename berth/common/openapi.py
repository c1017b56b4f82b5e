"""Each API's OpenAPI 3.1 document, generated from its route table and its request schemas.

The route table says which paths and methods exist; ``ApiDescription.bodies`` says what each
write carries (the JSON schema the API validates it with, else any JSON object, or nothing),
``replies`` what the main operations answer on success (a status and the schema of its body),
and ``queries`` the query parameters an operation reads (``required_queries`` those it
cannot do without). Every operation may answer any 4xx in the API's own error document, and
the few that refuse what Berth does not do answer 501 in it too; a success without a declared
reply is described by its status range only.

``DescriptionServer`` answers ``GET <prefix>/openapi.json`` for an API, without authentication,
so a client (or a fuzzer) can learn the API before it has a token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.types import Scope, Send

from berth.common.asgi import routed_path

OPENAPI_VERSION = "3.1.0"
PATH = "/openapi.json"
WRITES = ("POST", "PUT", "PATCH")

# Any JSON object: a write whose body the API has no schema for yet.
ANY_OBJECT: dict[str, Any] = {"type": "object"}

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Body:
    """What a write carries: ``schema`` in ``media_type``; ``None`` for no body at all.
    ``required`` is false for a write that may go without one."""

    schema: Mapping[str, Any]
    media_type: str = "application/json"
    required: bool = True


@dataclass(frozen=True)
class Reply:
    """What an operation answers on success: ``status`` with a JSON body valid against
    ``schema``, or no body when ``schema`` is None."""

    status: int
    schema: Mapping[str, Any] | None


@dataclass(frozen=True)
class ApiDescription:
    """What the generator needs to know about one API besides its route table."""

    title: str
    version: str
    routes: Mapping[str, Mapping[str, Callable[..., Any]]]
    error: Mapping[str, Any]
    # (method, path template) to the body it takes; a write not named here takes any JSON
    # object, and ``None`` says it takes no body.
    bodies: Mapping[tuple[str, str], Body | None] = field(default_factory=dict)
    # (method, path template) of the operations that answer 501 for part of what they are
    # asked, with why: Berth does not do it, and says so rather than pretend.
    not_implemented: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # (method, path template) to what the operation answers on success.
    replies: Mapping[tuple[str, str], Reply] = field(default_factory=dict)
    # (method, path template) to the query parameters it reads: name to schema.
    queries: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    # (method, path template) to the query parameters among ``queries`` it cannot do without.
    required_queries: Mapping[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    # Paths answered without a token (version documents).
    anonymous: frozenset[str] = frozenset({"/"})
    description: str = ""


def links_schema(strict: bool = False) -> dict[str, Any]:
    """A reply's ``links``: a list of ``{"rel": ..., "href": ...}``; ``strict``, no other key."""
    link: dict[str, Any] = {
        "type": "object",
        "properties": {"rel": {"type": "string"}, "href": {"type": "string"}},
        "required": ["rel", "href"],
    }
    if strict:
        link["additionalProperties"] = False
    return {"type": "array", "items": link}


def document(api: ApiDescription, server_url: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``api`` served under ``server_url``."""
    paths: dict[str, Any] = {
        path: {method.lower(): _operation(api, method, path) for method in methods}
        for path, methods in api.routes.items()
    }
    paths[PATH] = {"get": _description_operation()}
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": api.title, "version": api.version, "description": api.description},
        "servers": [{"url": server_url or "/"}],
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"}
            },
            "schemas": {"Error": dict(api.error)},
            "responses": {
                "Error": {
                    "description": "A refusal, in the API's error document.",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
            },
        },
    }


def _operation(api: ApiDescription, method: str, path: str) -> dict[str, Any]:
    handler = api.routes[path][method]
    operation: dict[str, Any] = {
        "operationId": _operation_id(method, path),
        "summary": _summary(handler),
        "responses": {
            "2XX": {"description": "Success."},
            "4XX": {"$ref": "#/components/responses/Error"},
        },
    }
    reply = api.replies.get((method, path))
    if reply is not None:
        operation["responses"][str(reply.status)] = _reply(reply)
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAM.findall(path)
    ]
    required = api.required_queries.get((method, path), frozenset())
    parameters += [
        {"name": name, "in": "query", "required": name in required, "schema": dict(schema)}
        for name, schema in api.queries.get((method, path), {}).items()
    ]
    if parameters:
        operation["parameters"] = parameters
    if method in WRITES:
        body = api.bodies.get((method, path), Body(ANY_OBJECT))
        if body is not None:
            operation["requestBody"] = {
                "required": body.required,
                "content": {body.media_type: {"schema": dict(body.schema)}},
            }
    if (method, path) in api.not_implemented:
        operation["responses"]["501"] = {
            "description": api.not_implemented[(method, path)],
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
    if path in api.anonymous:
        operation["security"] = []
    return operation


def _reply(reply: Reply) -> dict[str, Any]:
    if reply.schema is None:
        return {"description": "Success, without a body."}
    return {
        "description": "Success.",
        "content": {"application/json": {"schema": dict(reply.schema)}},
    }


def _description_operation() -> dict[str, Any]:
    return {
        "operationId": "get_openapi_json",
        "summary": "This document.",
        "security": [],
        "responses": {"200": {"description": "The API's OpenAPI 3.1 document."}},
    }


def _operation_id(method: str, path: str) -> str:
    """``get_v2.1_servers_server_id``: unique per method and path, readable in a report."""
    words = [part.strip("{}") for part in path.split("/") if part]
    return "_".join([method.lower(), *words]) if words else f"{method.lower()}_root"


def _summary(handler: Callable[..., Any]) -> str:
    """The first sentence of the handler's docstring, else its module and name in words."""
    doc = " ".join((handler.__doc__ or "").split())
    if doc and not doc.startswith("``"):
        return doc.split(". ")[0].rstrip(".") + "."
    module = getattr(handler, "__module__", "").rsplit(".", 1)[-1].replace("_", " ")
    name = getattr(handler, "__name__", "operation").replace("_", " ")
    return f"{module.capitalize()}: {name}."


class DescriptionServer:
    """Answers ``GET /openapi.json`` with ``api``'s document; an app asks it first, before
    authentication, so the document needs no token.

    The document names the prefix the app is mounted under (its ``root_path``) as its server,
    so it is built once per prefix.
    """

    def __init__(self, api: ApiDescription) -> None:
        self.api = api
        self._built: dict[str, bytes] = {}

    def serves(self, scope: Scope) -> bool:
        return scope["method"] in ("GET", "HEAD") and routed_path(scope) == PATH

    async def respond(self, scope: Scope, send: Send) -> None:
        root = scope.get("root_path", "")
        if root not in self._built:
            self._built[root] = orjson.dumps(document(self.api, root))
        body = self._built[root]
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )

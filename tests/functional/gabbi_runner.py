"""Running one gabbi YAML file against a Placement service in-process."""

from __future__ import annotations

import unittest
from pathlib import Path
from types import ModuleType

import jsonschema
import orjson
import yaml
from a2wsgi import ASGIMiddleware
from gabbi import handlers, suitemaker
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from berth.common import routing
from berth.placement import microversion
from berth.placement.api.openapi import DESCRIPTION
from berth.placement.app import build_app
from berth.placement.service import PlacementService


class _BuiltOnFirstRequest:
    """The app, built when the first request arrives: after the story's fixtures have run,
    since gabbi asks for the app before it starts them and fixtures may change settings."""

    def __init__(self, service: PlacementService) -> None:
        self._service = service
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = build_app(self._service)
        await self._app(scope, receive, send)


# Each route's template by itself, so a request's path finds the reply the document declares.
_TEMPLATES: routing.Router[str] = routing.Router(
    {path: dict.fromkeys(methods, path) for path, methods in DESCRIPTION.routes.items()}
)


class _RepliesChecked:
    """Checks each answer given at the newest microversion against the reply the OpenAPI
    document declares for its operation and status, and notes in ``mismatches`` what does not
    match: the stories' answers are the ground truth the document describes."""

    def __init__(self, app: ASGIApp, mismatches: list[str]) -> None:
        self._app = app
        self._mismatches = mismatches

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._at_newest(scope):
            await self._app(scope, receive, send)
            return
        status = 0
        body = bytearray()

        async def kept(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
            await send(message)

        await self._app(scope, receive, kept)
        self._check(scope["method"], scope["path"], status, bytes(body))

    @staticmethod
    def _at_newest(scope: Scope) -> bool:
        try:
            return microversion.negotiate(Headers(scope=scope)) == microversion.MAX_VERSION
        except microversion.VersionError:
            return False

    def _check(self, method: str, path: str, status: int, body: bytes) -> None:
        try:
            template, _ = _TEMPLATES.match(method, path)
        except (routing.NoRoute, routing.MethodNotAllowed):
            return
        reply = DESCRIPTION.replies.get((method, template))
        if reply is None or reply.status != status:
            return
        if reply.schema is None:
            if body:
                self._mismatches.append(f"{method} {path} {status}: a body where none is declared")
            return
        validator = jsonschema.Draft202012Validator(
            reply.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
        )
        error = jsonschema.exceptions.best_match(validator.iter_errors(orjson.loads(body)))
        if error is not None:
            self._mismatches.append(
                f"{method} {path} {status}: {error.message} at {error.json_path}"
            )


def run_story(
    path: Path,
    service: PlacementService,
    fixtures: ModuleType,
    mismatches: list[str] | None = None,
) -> unittest.TestResult:
    """Every test of one YAML file, in order; ``fixtures`` holds the fixture classes it names.

    ``fixtures.CURRENT["service"]`` is set to ``service`` first, since gabbi builds fixtures
    without arguments. With ``mismatches``, each answer at the newest microversion is checked
    against the OpenAPI document's reply for it, and what does not match is added there.
    """
    fixtures.CURRENT["service"] = service
    app: ASGIApp = _BuiltOnFirstRequest(service)
    if mismatches is not None:
        app = _RepliesChecked(app, mismatches)
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        path.stem.replace("-", "_"),
        yaml.safe_load(path.read_text()),
        str(path.parent),
        "placement",
        None,
        fixtures,
        lambda: ASGIMiddleware(app),  # type: ignore[arg-type]
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
    )
    result = unittest.TestResult()
    suite.run(result)
    return result

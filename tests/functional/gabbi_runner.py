"""Running one gabbi YAML file against a Placement service in-process."""

from __future__ import annotations

import unittest
from pathlib import Path
from types import ModuleType

import yaml
from a2wsgi import ASGIMiddleware
from gabbi import handlers, suitemaker
from starlette.types import ASGIApp, Receive, Scope, Send

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


def run_story(path: Path, service: PlacementService, fixtures: ModuleType) -> unittest.TestResult:
    """Every test of one YAML file, in order; ``fixtures`` holds the fixture classes it names.

    ``fixtures.CURRENT["service"]`` is set to ``service`` first, since gabbi builds fixtures
    without arguments.
    """
    fixtures.CURRENT["service"] = service
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        path.stem.replace("-", "_"),
        yaml.safe_load(path.read_text()),
        str(path.parent),
        "placement",
        None,
        fixtures,
        lambda: ASGIMiddleware(_BuiltOnFirstRequest(service)),  # type: ignore[arg-type]
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
    )
    result = unittest.TestResult()
    suite.run(result)
    return result

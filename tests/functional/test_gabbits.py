"""Runs every YAML HTTP test in ``gabbits/`` against the app in-process, on every backend."""

from __future__ import annotations

import unittest
from pathlib import Path

import pytest
import yaml
from a2wsgi import ASGIMiddleware
from gabbi import handlers, suitemaker
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.placement.app import build_app
from berth.placement.service import PlacementService
from tests.functional import gabbi_fixtures

GABBITS = Path(__file__).parent / "gabbits"


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


@pytest.mark.parametrize("story", sorted(GABBITS.glob("*.yaml")), ids=lambda p: p.stem)
def test_gabbi_story(story: Path, placement_service: PlacementService) -> None:
    gabbi_fixtures.CURRENT["service"] = placement_service
    with story.open() as f:
        spec = yaml.safe_load(f)
    suite = suitemaker.test_suite_from_dict(
        unittest.TestLoader(),
        story.stem.replace("-", "_"),
        spec,
        str(GABBITS),
        "placement",
        None,
        gabbi_fixtures,
        lambda: ASGIMiddleware(_BuiltOnFirstRequest(placement_service)),  # type: ignore[arg-type]
        handlers=[handler() for handler in handlers.RESPONSE_HANDLERS],
    )
    result = unittest.TestResult()
    suite.run(result)
    problems = [f"{test.id()}:\n{trace}" for test, trace in result.failures + result.errors]
    assert not problems, "\n\n".join(problems)
    assert result.testsRun > 0

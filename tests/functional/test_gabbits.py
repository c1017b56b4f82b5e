"""Runs every YAML HTTP test in ``gabbits/`` against the app in-process, on every backend."""

from __future__ import annotations

import unittest
from pathlib import Path

import pytest
import yaml
from a2wsgi import ASGIMiddleware
from gabbi import suitemaker

from berth.placement.app import build_app
from berth.placement.service import PlacementService
from tests.functional import gabbi_fixtures

GABBITS = Path(__file__).parent / "gabbits"


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
        lambda: ASGIMiddleware(build_app(placement_service)),  # type: ignore[arg-type]
    )
    result = unittest.TestResult()
    suite.run(result)
    problems = [f"{test.id()}:\n{trace}" for test, trace in result.failures + result.errors]
    assert not problems, "\n\n".join(problems)
    assert result.testsRun > 0

"""Runs every YAML HTTP test in ``gabbits/`` against the app in-process, on every backend, and
checks the answers given at the newest microversion against the Placement OpenAPI document."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.placement.service import PlacementService
from tests.functional import gabbi_fixtures
from tests.functional.gabbi_runner import run_story

GABBITS = Path(__file__).parent / "gabbits"


@pytest.mark.parametrize("story", sorted(GABBITS.glob("*.yaml")), ids=lambda p: p.stem)
def test_gabbi_story(story: Path, placement_service: PlacementService) -> None:
    mismatches: list[str] = []
    result = run_story(story, placement_service, gabbi_fixtures, mismatches)
    problems = [f"{test.id()}:\n{trace}" for test, trace in result.failures + result.errors]
    assert not problems, "\n\n".join(problems)
    assert result.testsRun > 0
    # Every answer the story got at the newest microversion is as the OpenAPI document says.
    assert not mismatches, "\n".join(mismatches)

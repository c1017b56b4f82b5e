"""Each test gets the compute databases and in-process Placement and network services."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.stuck_builds.world import Services, started


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Services]:
    with started(tmp_path) as services:
        yield services

"""The compute databases each store test runs on: an API database and a cell database, on
SQLite always and on PostgreSQL and MariaDB when their URLs are set (see ``tests/dbs.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from berth.common.db import Database
from berth.compute.db import api_schema, cell_schema, migrate
from tests import dbs


def _worker(request: pytest.FixtureRequest) -> str:
    return str(getattr(request.config, "workerinput", {}).get("workerid", "main"))


@pytest.fixture(scope="session", params=dbs.backends())
def compute_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api_db(
    compute_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_migrated_database(
        compute_backend, _worker(request), tmp_path, "_capi", migrate.sync_api, api_schema.metadata
    )
    yield db
    db.dispose()


@pytest.fixture
def cell_db(
    compute_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_migrated_database(
        compute_backend,
        _worker(request),
        tmp_path,
        "_cell",
        migrate.sync_cell,
        cell_schema.metadata,
    )
    yield db
    db.dispose()

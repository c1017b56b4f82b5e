"""JSON columns are read by orjson, and what orjson refuses still reads as json would read it."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from berth.common.db import Database

documents = sa.Table(
    "json_column_documents",
    sa.MetaData(),
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("document", sa.JSON, nullable=False),
)


@pytest.fixture
def db(placement_db: Database) -> Iterator[Database]:
    """The worker's database with the table, dropped after (a server's database is the
    worker's for the whole run, and other tests compare its tables with the schema)."""
    with placement_db.write() as conn:
        documents.create(conn)
    yield placement_db
    with placement_db.write() as conn:
        documents.drop(conn)


def _round_trip(db: Database, value: Any) -> Any:
    with db.write() as conn:
        row_id = conn.execute(documents.insert().values(document=value)).inserted_primary_key[0]
    with db.read() as conn:
        return conn.scalar(sa.select(documents.c.document).where(documents.c.id == row_id))


@pytest.mark.parametrize(
    "value",
    [
        {"fixed_ips": [{"subnet_id": "s", "ip_address": "10.0.0.5"}], "mtu": 1500, "up": True},
        ["é", None, 1.5, {"nested": {"deeper": []}}],
        {"past 64 bits": 2**70, "negative": -(2**65)},  # orjson refuses these; json reads them
    ],
)
def test_a_json_column_reads_back_what_was_written(db: Database, value: Any) -> None:
    assert _round_trip(db, value) == value


def test_nan_written_by_json_reads_back_on_sqlite(tmp_path: Path) -> None:
    # Only SQLite's JSON column holds NaN (PostgreSQL's and MariaDB's refuse it): orjson does
    # not read it, json does.
    sqlite = Database(f"sqlite:///{tmp_path / 'json.db'}")
    try:
        with sqlite.write() as conn:
            documents.create(conn)
        assert math.isnan(_round_trip(sqlite, {"x": float("nan")})["x"])
    finally:
        sqlite.dispose()

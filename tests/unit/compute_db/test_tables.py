"""What the compute stores share: an insert that may meet a unique key (``try_insert``)."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from berth.common.db import Database
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import build_requests

WHEN = dt.datetime(2026, 1, 1, 12, 0, 0)


def _row(instance_uuid: str) -> dict[str, object]:
    return {
        "instance_uuid": instance_uuid,
        "project_id": "p",
        "user_id": "u",
        "instance": {},
        "created_at": WHEN,
    }


def _stored(db: Database) -> list[str]:
    with db.read() as conn:
        query = sa.select(build_requests.c.instance_uuid).order_by(build_requests.c.instance_uuid)
        return [uuid[0] for uuid in conn.execute(query).scalars()]


def test_a_duplicate_insert_leaves_the_transaction_going(api_db: Database) -> None:
    """On every backend (SQLite without a savepoint): the duplicate is refused, what the
    transaction wrote before and after it commits."""
    with api_db.write() as conn:
        assert try_insert(conn, build_requests.insert().values(**_row("a" * 36)))
        assert not try_insert(conn, build_requests.insert().values(**_row("a" * 36)))
        assert try_insert(conn, build_requests.insert().values(**_row("b" * 36)))
    assert _stored(api_db) == ["a", "b"]


def test_rows_with_a_duplicate_among_them_insert_none(api_db: Database) -> None:
    with api_db.write() as conn:
        assert try_insert(conn, build_requests.insert(), [_row("a" * 36)])
        rows = [_row("c" * 36), _row("a" * 36), _row("d" * 36)]
        assert not try_insert(conn, build_requests.insert(), rows)
    assert _stored(api_db) == ["a"]

"""Pooled connections: a connection the server dropped while it sat idle is replaced unseen."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from berth.common import db as db_module
from berth.common.db import Database


def _server_side_id(conn: sa.Connection) -> int:
    if conn.dialect.name == "postgresql":
        return int(conn.scalar(sa.text("SELECT pg_backend_pid()")))
    return int(conn.scalar(sa.text("SELECT CONNECTION_ID()")))


def _kill(db: Database, server_id: int) -> None:
    admin = sa.create_engine(db.engine.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": server_id})
        else:
            conn.exec_driver_sql(f"KILL {server_id}")
    admin.dispose()


def test_a_connection_killed_while_idle_is_replaced_before_use(
    placement_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    if placement_db.backend == "sqlite":
        pytest.skip("SQLite has no server to drop a connection")
    placement_db.engine.dispose()
    with placement_db.read() as conn:
        first = _server_side_id(conn)
    _kill(placement_db, first)
    monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    with placement_db.read() as conn:
        second = _server_side_id(conn)
    assert second != first


def test_a_connection_back_at_once_is_not_pinged(
    placement_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    if placement_db.backend == "sqlite":
        pytest.skip("SQLite has no server to drop a connection")
    pings: list[object] = []
    monkeypatch.setattr(placement_db.engine.dialect, "do_ping", pings.append)
    monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 3600.0)
    for _ in range(3):
        with placement_db.read() as conn:
            conn.execute(sa.text("SELECT 1"))
    assert pings == []
    monkeypatch.setattr(db_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    with placement_db.read() as conn:
        conn.execute(sa.text("SELECT 1"))
    assert len(pings) == 1

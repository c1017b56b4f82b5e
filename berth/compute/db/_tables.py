"""What the compute service's two schemas share: naming convention, table options, timestamps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.db import inserted
from berth.common.timeutils import utcnow

MYSQL = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin", "mysql_engine": "InnoDB"}
UUID = 36
NAME = 255


def new_metadata() -> sa.MetaData:
    return sa.MetaData(
        naming_convention={
            "ix": "ix_%(table_name)s_%(column_0_N_name)s",
            "uq": "uq_%(table_name)s_%(column_0_N_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


def timestamps() -> list[sa.Column[Any]]:
    """``created_at`` set on insert, ``updated_at`` on every update (naive UTC, to the second)."""
    return [
        sa.Column("created_at", sa.DateTime, nullable=False, default=utcnow),
        sa.Column("updated_at", sa.DateTime, nullable=True, onupdate=utcnow),
    ]


def try_insert(
    conn: Connection,
    statement: sa.Insert,
    rows: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    on_cursor: bool = False,
) -> bool:
    """Run an insert as one statement (with its own values, or one row's given here: see
    ``berth.common.db.inserted``), or of ``rows`` in one executemany in a savepoint; False
    (and the transaction still usable, nothing inserted) when it breaks a unique constraint. A
    statement built once and given its rows here costs less than one built with ``values()``
    each time, and less again run on the driver's cursor (``on_cursor``, for one row: see
    ``berth.common.direct``)."""
    if rows is None or isinstance(rows, Mapping):
        return inserted(conn, statement, rows or {}, on_cursor)
    try:
        with conn.begin_nested():
            conn.execute(statement, list(rows))
    except IntegrityError:
        return False
    return True


def first_of(
    conn: Connection, query: sa.Select[Any], params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The first row of a hot query built once, run on the driver's cursor
    (``berth.common.direct.mappings``), None when there is none."""
    found = direct.mappings(conn, query, params)
    return found[0] if found else None


def locked(conn: Connection, query: sa.Select[Any]) -> sa.Select[Any]:
    """``query ... FOR UPDATE`` where the database has row locks; a SQLite write transaction
    already holds the whole database."""
    return query if conn.dialect.name == "sqlite" else query.with_for_update()

"""``berth.common.direct`` runs a statement on the driver's cursor as ``Connection.execute``
would: the same rows (datetimes included, which SQLite keeps as text), the same parameters
written, and the driver's errors as the same SQLAlchemy exceptions, on every backend."""

from __future__ import annotations

import datetime as dt

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.db import Database
from berth.compute.db import api_schema
from berth.placement.store import providers
from berth.placement.store import schema as s

_WHEN = dt.datetime(2026, 11, 27, 3, 4, 5, 678901)
_INSERT = s.resource_providers.insert()
_BY_NAME = providers.select_providers().where(s.resource_providers.c.name == sa.bindparam("name"))
_RENAME = (
    s.resource_providers.update()
    .where(s.resource_providers.c.name == sa.bindparam("old"))
    .values(name=sa.bindparam("new"), generation=s.resource_providers.c.generation + 1)
)
_BY_NAMES = sa.select(s.resource_providers.c.name).where(
    s.resource_providers.c.name.in_(sa.bindparam("names", expanding=True))
)


def _row(name: str) -> dict[str, object]:
    return {"uuid": f"{name:0>36}", "name": name, "generation": 0, "created_at": _WHEN}


def test_rows_and_written_values_match_sqlalchemy(placement_db: Database) -> None:
    with placement_db.write() as conn:
        direct.execute(conn, _INSERT, [_row("a"), _row("b")])
        conn.execute(_INSERT, _row("c"))
        for name in "abc":
            expected = [tuple(row) for row in conn.execute(_BY_NAME, {"name": name})]
            got = direct.execute(conn, _BY_NAME, {"name": name}).rows
            assert got == expected
            # (MariaDB's DATETIME keeps whole seconds.)
            assert got[0][2] == name and got[0][8].replace(microsecond=0) == _WHEN.replace(
                microsecond=0
            )


def test_fixed_values_rowcount_and_scalar(placement_db: Database) -> None:
    with placement_db.write() as conn:
        direct.execute(conn, _INSERT, _row("a"))
        renamed = direct.execute(conn, _RENAME, {"old": "a", "new": "z"})
        missed = direct.execute(conn, _RENAME, {"old": "nobody", "new": "y"})
        generation = direct.execute(
            conn,
            sa.select(s.resource_providers.c.generation).where(s.resource_providers.c.name == "z"),
        )
    assert (renamed.rowcount, missed.rowcount) == (1, 0)
    assert generation.scalar() == 1


def test_expanding_in_goes_through_sqlalchemy(placement_db: Database) -> None:
    with placement_db.write() as conn:
        direct.execute(conn, _INSERT, [_row("a"), _row("b"), _row("c")])
        found = direct.execute(conn, _BY_NAMES, {"names": ["a", "c", "x"]})
    assert sorted(found.rows) == [("a",), ("c",)]


def test_driver_errors_are_sqlalchemy_errors(placement_db: Database) -> None:
    with pytest.raises(IntegrityError), placement_db.write() as conn:
        direct.execute(conn, _INSERT, _row("a"))
        direct.execute(conn, _INSERT, _row("a"))
    with placement_db.read() as conn:
        assert direct.execute(conn, _BY_NAME, {"name": "a"}).rows == []


def _mappings_db() -> Database:
    db = Database("sqlite://")
    tables = [api_schema.cell_mappings, api_schema.instance_mappings]
    api_schema.metadata.create_all(db.engine, tables=tables)
    return db


def test_column_defaults_are_written_on_the_drivers_cursor() -> None:
    """A constant default (``queued_for_delete``'s False) is fixed in the compiled statement; a
    function of nothing (``created_at``'s default, ``updated_at``'s onupdate: ``utcnow``) is
    called at each execution, as SQLAlchemy calls it."""
    db = _mappings_db()
    mappings = api_schema.instance_mappings
    insert = mappings.insert()
    move = mappings.update().where(mappings.c.instance_uuid == sa.bindparam("uuid"))
    row = {"instance_uuid": "a" * 36, "project_id": "p", "user_id": "u"}
    moved = {"uuid": "a" * 36, "queued_for_delete": True}
    for statement, keys in ((insert, tuple(row)), (move, tuple(moved))):
        assert direct._compile(statement, db.engine.dialect, keys, False) is not None
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)
    with db.write() as conn:
        direct.execute(conn, insert, row)
        created = conn.execute(sa.select(mappings)).mappings().one()
        direct.execute(conn, move, moved)
        found = conn.execute(sa.select(mappings)).mappings().one()
    assert created["queued_for_delete"] is False and created["updated_at"] is None
    assert created["created_at"] >= before and found["updated_at"] >= before
    assert found["queued_for_delete"] is True


def test_a_default_of_the_execution_context_is_left_to_sqlalchemy() -> None:
    table = sa.Table(
        "numbered",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("n", sa.Integer),
        sa.Column("twice", sa.Integer, default=lambda ctx: 2 * ctx.get_current_parameters()["n"]),
    )
    db = Database("sqlite://")
    table.create(db.engine)
    assert direct._compile(table.insert(), db.engine.dialect, ("n",), False) is None
    with db.write() as conn:
        direct.execute(conn, table.insert(), {"n": 21})
        assert conn.execute(sa.select(table.c.twice)).scalar() == 42


def test_the_engine_s_statement_listeners_are_told_as_sqlalchemy_tells_them(
    placement_db: Database,
) -> None:
    """A listener of ``before_cursor_execute`` (the tests that count a request's statements)
    sees a statement on the cursor with the SQL and the arguments the driver is given."""
    seen: list[tuple[str, object, bool]] = []

    def record(
        _conn: object, _cursor: object, sql: str, args: object, _c: object, many: bool
    ) -> None:
        seen.append((sql, args, many))

    sa.event.listen(placement_db.engine, "before_cursor_execute", record)
    try:
        with placement_db.write() as conn:
            direct.execute(conn, _INSERT, [_row("a"), _row("b")])
            direct.execute(conn, _BY_NAME, {"name": "a"})
    finally:
        sa.event.remove(placement_db.engine, "before_cursor_execute", record)
    inserted, selected = (entry for entry in seen if "resource_providers" in entry[0])
    assert inserted[0].startswith("INSERT") and inserted[2] is True and len(inserted[1]) == 2  # type: ignore[arg-type]
    assert selected[0].startswith("SELECT") and selected[2] is False and "a" in str(selected[1])

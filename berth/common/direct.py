"""Hot statements compiled once per dialect and run on the driver's cursor (Placement's writes,
a build's steps in compute).

``Connection.execute`` costs about 20 µs a statement before the database sees it (the cache key,
the parameters' processing, the result's metadata), against 4 µs for the same SQL on the
driver's cursor: a third of a provider's registration or a claim. ``execute`` here keeps what
matters of SQLAlchemy's work, done once per statement and dialect: the SQL as the dialect
renders it, each parameter's place and bind processor (SQLite stores datetimes as text), each
result column's processor, and the driver's errors wrapped as SQLAlchemy wraps them (so
``IntegrityError``, deadlock retries and "database unavailable" answers stay as they were). It
runs in the connection's own transaction, like any other statement. The engine's
``before_cursor_execute`` listeners, when it has any, are told of each statement as SQLAlchemy
tells them (the tests that count a request's statements listen there).

Only statements built once belong here (the cache holds each for good). A statement with an
expanding ``IN`` (rendered again for each list's length) goes through ``Connection.execute``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a statement gave: its rows (tuples, in the statement's column order), the rows it
    changed, and the id of the row it inserted where the driver tells (MariaDB)."""

    rows: list[tuple[Any, ...]]
    rowcount: int
    lastrowid: int | None

    def scalar(self) -> Any:
        """The first column of the first row, None when there is no row."""
        return self.rows[0][0] if self.rows else None


@dataclass(slots=True)
class _Compiled:
    sql: str
    # Per parameter, in the order the driver takes them: its name, whether the caller gives
    # it (else it is a value fixed in the statement), that value, and its bind processor.
    binds: tuple[tuple[str, bool, Any, Processor], ...]
    positional: bool
    # The result columns' types, and once the first result's description has given the
    # driver's column types (some dialects pick a processor by them) the places and
    # processors of the columns that have one.
    columns: tuple[sa.types.TypeEngine[Any], ...]
    results: tuple[tuple[int, Callable[[Any], Any]], ...] | None = None
    # The parameters whose value a column default computes at each execution (their place
    # among ``binds``, the function, the bind processor), as SQLAlchemy computes them.
    computed: tuple[tuple[int, Callable[[], Any], Processor], ...] = ()


# By the ids of statement and dialect, the columns a DML statement's parameters name, and whether
# it runs for many rows; with the objects kept so that the ids stay theirs.
_CACHE: dict[
    tuple[int, int, tuple[str, ...], bool], tuple[sa.Executable, Dialect, _Compiled | None]
] = {}


def execute(
    conn: Connection,
    statement: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
) -> Outcome:
    """Run ``statement`` with ``params`` (one mapping, or a list of them for an executemany).

    An ``INSERT`` or ``UPDATE`` without its values sets the columns its parameters name (the
    first row's, for many), as with ``Connection.execute``."""
    dialect = conn.dialect
    # (A dict first: the check against the abstract Sequence costs more than the rest here.)
    many = not isinstance(params, dict) and isinstance(params, Sequence)
    first: Mapping[str, Any] = {}
    if many:
        first = params[0] if params else {}  # type: ignore[index]
    elif params is not None:
        first = params  # type: ignore[assignment]
    keys = tuple(first) if isinstance(statement, UpdateBase) else ()
    key = (id(statement), id(dialect), keys, many)
    cached = _CACHE.get(key)
    if cached is None:
        cached = (statement, dialect, _compile(statement, dialect, keys, many))
        _CACHE[key] = cached
    compiled = cached[2]
    if compiled is None:
        return _through_sqlalchemy(conn, statement, params)
    args: Any = (
        [_arguments(compiled, row) for row in params]  # type: ignore[union-attr]
        if many
        else _arguments(compiled, first)
    )
    cursor = conn.connection.cursor()
    try:
        listeners = conn.dispatch.before_cursor_execute
        if listeners:
            # With no execution context: SQLAlchemy makes none for these statements.
            for listener in listeners:
                listener(conn, cursor, compiled.sql, args, None, many)
        if many:
            cursor.executemany(compiled.sql, args)
        else:
            cursor.execute(compiled.sql, args)
        rows = _processed(compiled, dialect, cursor) if cursor.description is not None else []
        # psycopg's cursor has no lastrowid (PostgreSQL answers ids with RETURNING).
        outcome = Outcome(rows, cursor.rowcount, getattr(cursor, "lastrowid", None))
    except dialect.loaded_dbapi.Error as exc:
        raise _wrapped(conn, compiled.sql, args, exc, cursor) from exc
    finally:
        cursor.close()
    return outcome


def mappings(
    conn: Connection, query: sa.Select[Any], params: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """A query's rows as dicts by column name, as ``.mappings()`` gives them."""
    names = query.selected_columns.keys()
    return [dict(zip(names, row, strict=True)) for row in execute(conn, query, params).rows]


def _compile(
    statement: sa.Executable, dialect: Dialect, column_keys: Sequence[str], many: bool
) -> _Compiled | None:
    # (For many rows, no RETURNING the statement does not ask for, as SQLAlchemy compiles it.)
    compiled = statement.compile(
        dialect=dialect, column_keys=list(column_keys), for_executemany=many
    )
    if not isinstance(compiled, SQLCompiler) or compiled.post_compile_params:
        return None
    # The column defaults SQLAlchemy fills in at each execution for the columns the
    # parameters do not give: a constant (``default=False``) is fixed here as any value of the
    # statement is, a function of nothing (``default=utcnow``, ``onupdate=utcnow``) called at
    # each execution; a statement with any other (one that reads the execution's context, a
    # SQL expression) is left to SQLAlchemy.
    constants: dict[str, Any] = {}
    functions: dict[str, Callable[[], Any]] = {}
    prefetched = [(column, column.default) for column in compiled.insert_prefetch] + [
        (column, column.onupdate) for column in compiled.update_prefetch
    ]
    for column, default in prefetched:
        if isinstance(default, sa.ColumnDefault) and default.is_scalar:
            constants[column.key] = default.arg
        elif isinstance(default, sa.ColumnDefault) and default.is_callable:
            function = _of_nothing(default.arg)
            if function is None:
                return None
            functions[column.key] = function
        else:
            return None
    by_name = {name: bind for bind, name in compiled.bind_names.items()}
    order = compiled.positiontup if compiled.positional else list(by_name)
    binds = []
    computed = []
    for name in order or ():
        bind = by_name[name]
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if name in functions:
            computed.append((len(binds), functions[name], process))
        binds.append((name, bind.required, constants.get(name, bind.value), process))
    # A DML statement's rows are those of its RETURNING, which PostgreSQL's dialect adds to an
    # INSERT on its own (the new primary key).
    returned = compiled.effective_returning if isinstance(statement, UpdateBase) else None
    selected = returned if returned is not None else getattr(statement, "exported_columns", ())
    columns = tuple(column.type for column in selected)
    return _Compiled(
        compiled.string, tuple(binds), compiled.positional, columns, computed=tuple(computed)
    )


def _of_nothing(default: Callable[..., Any]) -> Callable[[], Any] | None:
    """The function of nothing a callable column default calls; None for any other default
    (one that takes the execution's context). SQLAlchemy wraps a function of nothing in a
    function of the context that ignores it, keeping the function as ``__wrapped__``."""
    if getattr(default, "__code__", None) is not _WRAPPER_CODE:
        return None
    return getattr(default, "__wrapped__", None)


# The code of that wrapper (every wrapper SQLAlchemy makes so runs the same code).
_WRAPPER_CODE = getattr(sa.ColumnDefault(lambda: None).arg, "__code__", None)


def _arguments(compiled: _Compiled, params: Mapping[str, Any]) -> Any:
    values = []
    for name, given, fixed, process in compiled.binds:
        value = params[name] if given else fixed
        values.append(process(value) if process is not None and value is not None else value)
    for index, function, process in compiled.computed:
        value = function()
        values[index] = process(value) if process is not None and value is not None else value
    if compiled.positional:
        return tuple(values)
    return {name: value for (name, *_), value in zip(compiled.binds, values, strict=True)}


def _processed(compiled: _Compiled, dialect: Dialect, cursor: Any) -> list[tuple[Any, ...]]:
    rows = cursor.fetchall()
    processors = compiled.results
    if processors is None:
        found = (
            type_.dialect_impl(dialect).result_processor(dialect, described[1])
            for type_, described in zip(compiled.columns, cursor.description, strict=True)
        )
        processors = compiled.results = tuple(
            (place, process) for place, process in enumerate(found) if process is not None
        )
    if not processors:
        return list(rows)
    # Only the columns that have a processor are visited: a wide row (an instance's) has a
    # few among dozens, and a pass over every column cost more than the statement.
    processed = []
    for row in rows:
        values = list(row)
        for place, process in processors:
            values[place] = process(values[place])
        processed.append(tuple(values))
    return processed


def _through_sqlalchemy(
    conn: Connection,
    statement: sa.Executable,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
) -> Outcome:
    result = conn.execute(statement, params)  # type: ignore[arg-type]
    rows = [tuple(row) for row in result] if result.returns_rows else []
    # Only an insert has one; psycopg's cursor has none (PostgreSQL answers ids with RETURNING).
    lastrowid = None
    if isinstance(statement, sa.Insert) and not result.returns_rows:
        lastrowid = getattr(result.context.cursor, "lastrowid", None)
    return Outcome(rows, result.rowcount, lastrowid)


def _wrapped(
    conn: Connection, sql: str, args: Any, exc: Exception, cursor: Any
) -> sa.exc.DBAPIError:
    """The driver's error as SQLAlchemy would raise it; a lost connection is invalidated, so
    the pool replaces it, as SQLAlchemy does."""
    dialect = conn.dialect
    lost = dialect.is_disconnect(exc, conn.connection.dbapi_connection, cursor)
    if lost:
        conn.invalidate(exc)
    return sa.exc.DBAPIError.instance(
        sql,
        args,
        exc,
        dialect.loaded_dbapi.Error,
        connection_invalidated=lost,
        dialect=dialect,
    )

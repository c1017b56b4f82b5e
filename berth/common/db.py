"""Database engines for SQLite, PostgreSQL and MariaDB/MySQL, and the transactions services use.

Writes that check and then change state (allocations, generations) must serialise against each other.
PostgreSQL and MariaDB do this with the row locks their ``UPDATE`` of a generation takes; SQLite
has no row locks, so a write transaction there starts with ``BEGIN IMMEDIATE`` and holds the database's
single write lock from its first statement, instead of failing when it upgrades a read lock later.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any, Protocol, TypeVar

import orjson
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError

from berth.common import direct

T = TypeVar("T")

_IMMEDIATE = "berth_sqlite_immediate"
# A pooled connection idle longer than this is pinged before use (see ``_ping_when_idle``).
PING_AFTER_IDLE_SECONDS = 1.0
# One lock per SQLite file in this process (see ``Database._writer``).
_SQLITE_WRITERS: dict[str, threading.RLock] = {}
_SQLITE_WRITERS_GUARD = threading.Lock()


def normalise_url(url: str) -> str:
    """Pick the drivers Berth ships with when a URL names only the database kind."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("mysql://") or url.startswith("mariadb://"):
        return "mysql+pymysql://" + url.split("://", 1)[1]
    return url


# Connections a pool keeps open while idle, and how many more it may open for a burst.
POOL_SIZE = 10
MAX_OVERFLOW = 20
# SQLite connections cost three file handles each (the file, its WAL, its shared memory) and
# nothing on a server: keep one for each of an app's handler threads (berth.common.asgi), as
# opening one runs its pragmas again, and no more (a 41st transaction at once waits for one),
# so that a process of six databases stays well inside a 1,024 file limit.
SQLITE_POOL_SIZE = 40


def _json_loads(text: str | bytes) -> Any:
    """A stored JSON column's value, read by orjson (several times json's speed; a listing of
    servers reads a few per row); what orjson refuses and json takes (NaN, an integer past 64
    bits) the slow way."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def create_engine(url: str, pool_size: int = POOL_SIZE) -> Engine:
    url = normalise_url(url)
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(parsed)
    kwargs: dict[str, Any] = {
        "pool_size": pool_size,
        "max_overflow": MAX_OVERFLOW,
        "json_deserializer": _json_loads,
    }
    if parsed.get_backend_name() == "mysql":
        kwargs["isolation_level"] = "READ COMMITTED"
        parsed = parsed.update_query_dict({"charset": "utf8mb4"})
    engine = sa.create_engine(parsed, **kwargs)
    _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: Engine) -> None:
    """Check a pooled connection before use only if it sat idle for a while.

    Pinging on every checkout (``pool_pre_ping``) costs a round trip per transaction, a tenth of
    a claim's. A connection returned moments ago is alive unless the server went away in those
    moments; one idle longer is pinged, and a dead one is replaced before anyone uses it.
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as exc:
            # The pool drops this connection and checks out a new one.
            raise DisconnectionError(str(exc)) from exc


def _sqlite_engine(url: sa.URL) -> Engine:
    pool: dict[str, Any] = {}
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
        # An in-memory database has its own pool, one connection each thread.
        pool = {"pool_size": SQLITE_POOL_SIZE, "max_overflow": 0}
    engine = sa.create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30},
        json_deserializer=_json_loads,
        **pool,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys = ON")
        cur.execute("PRAGMA busy_timeout = 30000")
        if url.database and url.database != ":memory:":
            cur.execute("PRAGMA journal_mode = WAL")
            cur.execute("PRAGMA synchronous = NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        # On the driver's connection: SQLAlchemy's execution of a statement costs more than
        # SQLite's work on this one, and every transaction runs it.
        sql = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        try:
            conn.connection.dbapi_connection.execute(sql)  # type: ignore[union-attr]
        except sqlite3.Error as exc:
            # As SQLAlchemy wraps it ("database is locked" is retried as a deadlock).
            raise sa.exc.DBAPIError.instance(sql, (), exc, sqlite3.Error) from exc

    return engine


def holds_database(conn: Connection) -> bool:
    """Whether ``conn``'s transaction holds the whole database against every other writer: a
    SQLite write transaction does from its ``BEGIN IMMEDIATE`` (``Database.write``)."""
    return bool(conn.get_execution_options().get(_IMMEDIATE, False))


class WriteHook(Protocol):
    """Something a service does in every write transaction: ``begin`` right after it starts,
    ``before_commit`` as its last statements, so they commit (or roll back) with it."""

    def begin(self, conn: Connection) -> None: ...

    def before_commit(self, conn: Connection) -> None: ...


class Database:
    """A service's database: short read transactions and serialisable-enough write transactions."""

    def __init__(
        self, url: str, write_hooks: Sequence[WriteHook] = (), pool_size: int = POOL_SIZE
    ) -> None:
        """``pool_size``: connections kept open while idle (a burst may open ``MAX_OVERFLOW``
        more, closed after use). Processes with many databases keep fewer, so that a cloud's
        processes together stay within the server's connection limit."""
        self.url = normalise_url(url)
        self.engine = create_engine(self.url, pool_size)
        self.backend = self.engine.dialect.name
        self.write_hooks = tuple(write_hooks)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction whose every statement sees the same committed state.

        PostgreSQL and MariaDB need REPEATABLE READ for that; a SQLite transaction already is one.
        """
        with self.engine.connect() as conn:
            if self.backend != "sqlite":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    @contextmanager
    def one_statement(self) -> Iterator[Connection]:
        """A connection outside any transaction, for a read of one statement, which sees one
        committed state on its own, run on the driver's cursor (``berth.common.direct``):
        without the BEGIN and COMMIT of ``read``, each a round trip on a server.

        SQLite's driver runs statements that way between the transactions Berth begins itself.
        psycopg would begin a transaction before the statement: autocommit. PyMySQL's
        statement begins one itself, ended by the pool's rollback on return."""
        with self.engine.connect() as conn:
            if self.backend == "postgresql":
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            yield conn

    @contextmanager
    def write(self) -> Iterator[Connection]:
        with self._writer(), self.engine.connect() as conn:
            if self.backend == "sqlite":
                conn = conn.execution_options(**{_IMMEDIATE: True})
            with conn.begin():
                for hook in self.write_hooks:
                    hook.begin(conn)
                yield conn
                for hook in self.write_hooks:
                    hook.before_commit(conn)

    def _writer(self) -> AbstractContextManager[object]:
        """SQLite has one writer at a time: threads of this process queue on a lock for it and
        start the moment it is free, instead of polling SQLite's busy handler, which sleeps up to
        100 ms between tries. Other processes still meet the busy timeout."""
        if self.backend != "sqlite":
            return nullcontext()
        with _SQLITE_WRITERS_GUARD:
            return _SQLITE_WRITERS.setdefault(self.engine.url.database or "", threading.RLock())

    def write_with_retry(self, work: Callable[[Connection], T], attempts: int = 5) -> T:
        """Run ``work`` in a write transaction, retrying when the database reports a deadlock."""
        for attempt in range(attempts):
            try:
                with self.write() as conn:
                    return work(conn)
            except (OperationalError, DBAPIError) as exc:
                if attempt == attempts - 1 or not is_deadlock(exc):
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    def dispose(self) -> None:
        self.engine.dispose()


def inserted(
    conn: Connection, statement: sa.Insert, values: Mapping[str, Any], on_cursor: bool = False
) -> bool:
    """Run an insert of one row; False (nothing inserted, the transaction going on) when the
    database refuses the row (a unique key taken). A refused statement ends a PostgreSQL
    transaction, so there and on MariaDB the insert runs in a savepoint; SQLite takes back the
    refused statement alone, and a savepoint's two statements more would only hold its one
    write lock longer. ``on_cursor``: run it on the driver's cursor (``berth.common.direct``),
    for a statement built once."""
    savepoint = nullcontext() if conn.dialect.name == "sqlite" else conn.begin_nested()
    try:
        with savepoint:
            if on_cursor:
                direct.execute(conn, statement, values)
            else:
                conn.execute(statement, values)
    except sa.exc.IntegrityError:
        return False
    return True


# What a request is answered when its database cannot be reached (every API says it alike).
UNAVAILABLE = "The database is unavailable for the moment; try again."


def is_unavailable(exc: BaseException) -> bool:
    """True when the database could not be reached or dropped the connection (a restart, a
    failover, a full pool): nothing was changed, and the same request may work in a moment."""
    return isinstance(exc, OperationalError | DisconnectionError | sa.exc.InterfaceError
                      | sa.exc.TimeoutError)  # fmt: skip


def is_unstorable(exc: BaseException) -> bool:
    """True when the database refused a value the request gave (a NUL byte in a string on
    PostgreSQL, a number past its column's range): the request's fault, whatever validation let
    through. SQLite's driver refuses an integer past 64 bits before the database sees it, with
    a bare ``OverflowError``."""
    return isinstance(exc, sa.exc.DataError | OverflowError)


def is_deadlock(exc: DBAPIError) -> bool:
    """True for the errors a database raises when two transactions lock in opposite orders."""
    text = str(exc.orig).lower() if exc.orig is not None else str(exc).lower()
    return any(
        marker in text
        for marker in ("deadlock", "lock wait timeout", "could not serialize", "database is locked")
    )

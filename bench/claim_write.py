"""The least a claim must write, on the database driver alone: ``bench.placement_floor``'s floor
with the write.

A claim that keeps usage within capacity and loses nothing has to, in one transaction: take each
provider's usage row for the classes it claims (which locks it against racing claims) and raise
it, checking capacity in the same statement; record the consumer; record one allocation row per
class; commit. ``ClaimWriter.claim`` does exactly that, on scratch tables (``floor_*``) and the
driver's own connection, with no SQL toolkit, no change log for a candidate index, no consumer
generation and no validation: three statements a claim, against the five of Placement's ``PUT``
(``docs/performance.md``), and one commit for the claims that queue together, as Placement's. PostgreSQL and SQLite; MariaDB has no ``UPDATE ... RETURNING``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

# Far beyond what a benchmark claims: the floor never refuses for capacity, though it checks.
CAPACITY = 10**15
TABLES = ("floor_allocations", "floor_consumers", "floor_usage")
_SCHEMA = (
    "CREATE TABLE floor_usage (provider VARCHAR(36) NOT NULL, class VARCHAR(255) NOT NULL, "
    "used BIGINT NOT NULL, capacity BIGINT NOT NULL, PRIMARY KEY (provider, class))",
    "CREATE TABLE floor_consumers (uuid VARCHAR(36) PRIMARY KEY, project VARCHAR(255) NOT NULL, "
    "user_id VARCHAR(255) NOT NULL)",
    "CREATE TABLE floor_allocations (consumer VARCHAR(36) NOT NULL, provider VARCHAR(36) NOT NULL, "
    "class VARCHAR(255) NOT NULL, used BIGINT NOT NULL)",
)

# As Berth's writes (``berth.common.db.Database.write_with_retry``).
_DEADLOCK_ATTEMPTS = 5

Allocations = Mapping[str, Mapping[str, Mapping[str, int]]]  # provider -> {"resources": {...}}


def supported(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://", "postgresql+psycopg://", "sqlite:///"))


def _connect(url: str) -> Any:
    """A driver connection with its transactions begun by ``claim`` (PostgreSQL: psycopg's own
    implicit transaction; SQLite: ``BEGIN IMMEDIATE``, as Berth's writes begin)."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(
            url.removeprefix("sqlite:///"),
            isolation_level=None,
            timeout=30,
            check_same_thread=False,
        )
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        return conn
    return psycopg.connect("postgresql://" + url.split("://", 1)[1])


def _sql(url: str, statement: str) -> str:
    return statement.replace("%s", "?") if url.startswith("sqlite:///") else statement


def prepare(url: str, providers: Mapping[str, Iterable[str]], capacity: int = CAPACITY) -> None:
    """The scratch tables, made again empty, with a usage row of ``capacity`` for each provider
    and class."""
    conn = _connect(url)
    try:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        for statement in _SCHEMA:
            conn.execute(statement)
        rows = [(p, c, 0, capacity) for p, classes in providers.items() for c in classes]
        conn.cursor().executemany(
            _sql(url, "INSERT INTO floor_usage VALUES (%s, %s, %s, %s)"), rows
        )
        conn.commit()
    finally:
        conn.close()


def drop(url: str) -> None:
    conn = _connect(url)
    try:
        for table in TABLES:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.commit()
    finally:
        conn.close()


@dataclass(eq=False)
class _Claim:
    consumer: str
    project: str
    user: str
    allocations: Allocations
    # Set when the claim is written (or failed), or when this claim's thread is to lead.
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False
    fits: bool = False
    error: BaseException | None = None


class ClaimWriter:
    """Claims group-committed, as Placement's are (``berth/placement/store/group_commit.py``):
    the claims that queue while one batch is written go in the next, one transaction, which the
    first of them writes for all; a batch with a claim that does not fit is written again claim
    by claim. One connection: one batch at a time, as SQLite allows anyway."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._sqlite = url.startswith("sqlite:///")
        self._conn = _connect(url)
        self._lock = threading.Lock()
        self._queue: list[_Claim] = []
        self._writing = False

    def claim(self, consumer: str, project: str, user: str, allocations: Allocations) -> bool:
        """Write the claim; False (nothing written) when a provider lacks the capacity."""
        mine = _Claim(consumer, project, user, allocations)
        with self._lock:
            self._queue.append(mine)
            mine.lead = not self._writing
            self._writing = True
        if not mine.lead:
            mine.done.wait()
        if mine.lead:
            self._lead()
        if mine.error is not None:
            raise mine.error
        return mine.fits

    def _lead(self) -> None:
        """Write what queued, then hand the lead to the first claim that queued meanwhile."""
        with self._lock:
            batch, self._queue = self._queue, []
        try:
            self._write_batch(batch)
        except BaseException as exc:
            for claim in batch:
                claim.error = exc
        with self._lock:
            if self._queue:
                self._queue[0].lead = True
                self._queue[0].done.set()
            else:
                self._writing = False
        for claim in batch:
            claim.done.set()

    def _write_batch(self, batch: list[_Claim]) -> None:
        if self._retried(batch):
            for claim in batch:
                claim.fits = True
            return
        for claim in batch:
            claim.fits = self._retried([claim])

    def _retried(self, claims: list[_Claim]) -> bool:
        """``_transaction``, again when PostgreSQL ended it for a deadlock: two workers' batches
        lock the same providers' rows in other orders, and Placement retries those too
        (``Database.write_with_retry``)."""
        for attempt in range(_DEADLOCK_ATTEMPTS):
            try:
                return self._transaction(claims)
            except psycopg.errors.DeadlockDetected:
                if attempt == _DEADLOCK_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")

    def _transaction(self, claims: list[_Claim]) -> bool:
        """Write ``claims`` in one transaction: committed when every one fits."""
        conn = self._conn
        if self._sqlite:
            conn.execute("BEGIN IMMEDIATE")
        try:
            written = all(self._write(conn, claim) for claim in claims)
        except BaseException:
            conn.rollback()
            raise
        if written:
            conn.commit()
        else:
            conn.rollback()
        return written

    def _write(self, conn: Any, claim: _Claim) -> bool:
        rows: list[Any] = []
        for provider, held in claim.allocations.items():
            resources = held["resources"]
            cases = " ".join("WHEN %s THEN %s" for _ in resources)
            marks = ", ".join("%s" for _ in resources)
            raised = conn.execute(
                _sql(
                    self._url,
                    f"UPDATE floor_usage SET used = used + CASE class {cases} END "
                    f"WHERE provider = %s AND class IN ({marks}) RETURNING used <= capacity",
                ),
                [*(v for pair in resources.items() for v in pair), provider, *resources],
            ).fetchall()
            if len(raised) != len(resources) or not all(fits for (fits,) in raised):
                return False
            rows += [v for pair in resources.items() for v in (claim.consumer, provider, *pair)]
        conn.execute(
            _sql(self._url, "INSERT INTO floor_consumers VALUES (%s, %s, %s)"),
            (claim.consumer, claim.project, claim.user),
        )
        values = ", ".join("(%s, %s, %s, %s)" for _ in range(len(rows) // 4))
        conn.execute(_sql(self._url, f"INSERT INTO floor_allocations VALUES {values}"), rows)
        return True

    def close(self) -> None:
        self._conn.close()

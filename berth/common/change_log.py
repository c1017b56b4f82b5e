"""A database's change sequence and log: one row numbering the writes, and per number what the
write changed, as (scope, key) rows. Placement's candidate indexes
(``berth.placement.store.changes``) and compute's cache of hosts
(``berth.compute.db.host_changes``) each keep one; the scopes and keys are theirs.

A writer advances the sequence (``advance``) as its transaction's last statements and logs what
it changed under the new number (``log``): the sequence row stays locked until the commit, so
numbers commit in order and a reader that sees a number sees every change numbered up to it. A
reader asks ``since`` for what was logged after the number it has seen, in one statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct

__all__ = ["KEEP", "ChangeSequence", "Logged"]

# Log rows older than this many numbers are pruned; a reader further behind reads everything.
KEEP = 100_000
_PRUNE_EVERY = 1_000


@dataclass(frozen=True, slots=True)
class Logged:
    """What was logged after a number, up to ``upto``: (scope, key) rows, or ``behind`` when
    the reader is too far behind for the log to tell (it reads everything again)."""

    upto: int
    rows: list[tuple[str, int | None]]
    behind: bool = False


class ChangeSequence:
    """The statements of one sequence table (``id``, ``value``; one row, id 1) and its log
    (``seq``, ``scope`` and ``key``), built once: every write and nearly every read runs them."""

    def __init__(self, sequence: sa.Table, log: sa.Table, key: str) -> None:
        self.log_table = log
        self.key = key
        self.advance_returning = (
            sequence.update()
            .where(sequence.c.id == 1)
            .values(value=sequence.c.value + 1)
            .returning(sequence.c.value)
        )
        self._advance = (
            sequence.update().where(sequence.c.id == 1).values(value=sequence.c.value + 1)
        )
        self._newest = sa.select(sequence.c.value).where(sequence.c.id == 1)
        self._insert = log.insert()
        self._since = (
            sa.select(sequence.c.value, log.c.scope, log.c[key])
            .select_from(
                sequence.outerjoin(
                    log,
                    sa.and_(
                        log.c.seq > sa.bindparam("seen"),
                        log.c.seq <= sequence.c.value,
                        log.c.seq <= sa.bindparam("horizon"),
                    ),
                )
            )
            .where(sequence.c.id == 1)
        )

    def advance(self, conn: Connection) -> int:
        """The next number, the sequence row locked by this transaction until it ends."""
        if conn.dialect.update_returning:
            return int(direct.execute(conn, self.advance_returning).scalar())
        direct.execute(conn, self._advance)
        return self.current(conn)

    def log(self, conn: Connection, value: int, logged: Sequence[tuple[str, int | None]]) -> None:
        """Log ``logged`` (scope, key) under number ``value``."""
        rows = [{"seq": value, "scope": scope, self.key: key} for scope, key in logged]
        direct.execute(conn, self._insert, rows if len(rows) > 1 else rows[0])
        self.prune(conn, value)

    def prune(self, conn: Connection, value: int) -> None:
        """Once every ``_PRUNE_EVERY`` numbers, drop the rows ``KEEP`` numbers older than
        ``value``."""
        if value % _PRUNE_EVERY == 0:
            conn.execute(self.log_table.delete().where(self.log_table.c.seq <= value - KEEP))

    def current(self, conn: Connection) -> int:
        return int(direct.execute(conn, self._newest).scalar())

    def since(self, conn: Connection, seen: int) -> Logged:
        """What was logged after number ``seen``, up to the newest: one statement."""
        params = {"seen": seen, "horizon": seen + KEEP // 2}
        rows = direct.execute(conn, self._since, params).rows
        upto = int(rows[0][0])
        if upto - seen > KEEP // 2:
            return Logged(upto, [], behind=True)
        return Logged(upto, [(scope, key) for _, scope, key in rows if scope is not None])

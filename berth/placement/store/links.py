"""A provider's set of links in a join table (its traits, its aggregates), replaced as a whole."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.placement.store import changes


@dataclass(frozen=True)
class _Statements:
    current: sa.Select[tuple[object]]
    unlink: sa.Delete
    link: sa.Insert


@functools.cache
def _statements(table: sa.Table, column: str) -> _Statements:
    """Built once per join table: statements built per call cost more than SQLite's work."""
    owner = table.c.resource_provider_id
    target = table.c[column]
    return _Statements(
        current=sa.select(target).where(owner == sa.bindparam("provider")),
        unlink=table.delete().where(
            owner == sa.bindparam("provider"), target.in_(sa.bindparam("gone", expanding=True))
        ),
        link=table.insert(),
    )


def replace_links(
    conn: Connection,
    table: sa.Table,
    column: str,
    provider_id: int,
    wanted: set[int],
    current: set[int] | None = None,
) -> bool:
    """Make the provider's ``column`` values in ``table`` exactly ``wanted``; True if they changed.

    Only the difference is written, so unchanged links keep their rows. ``current``: the values
    now, when the caller read them already.
    """
    statements = _statements(table, column)
    if current is None:
        current = set(conn.scalars(statements.current, {"provider": provider_id}))
    if current != wanted:
        changes.touch(conn, [provider_id])
    if current - wanted:
        conn.execute(statements.unlink, {"provider": provider_id, "gone": sorted(current - wanted)})
    if wanted - current:
        direct.execute(
            conn,
            statements.link,
            [{"resource_provider_id": provider_id, column: value} for value in wanted - current],
        )
    return current != wanted

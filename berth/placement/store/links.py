"""A provider's set of links in a join table (its traits, its aggregates), replaced as a whole."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.placement.store import changes


def replace_links(
    conn: Connection, table: sa.Table, column: str, provider_id: int, wanted: set[int]
) -> bool:
    """Make the provider's ``column`` values in ``table`` exactly ``wanted``; True if they changed.

    Only the difference is written, so unchanged links keep their rows.
    """
    owner = table.c.resource_provider_id
    target = table.c[column]
    current = set(conn.scalars(sa.select(target).where(owner == provider_id)))
    if current != wanted:
        changes.touch(conn, [provider_id])
    if current - wanted:
        conn.execute(table.delete().where(owner == provider_id, target.in_(current - wanted)))
    if wanted - current:
        conn.execute(
            table.insert(),
            [{"resource_provider_id": provider_id, column: value} for value in wanted - current],
        )
    return current != wanted

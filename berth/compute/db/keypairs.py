"""Users' key pairs, in the API database: a user's key pairs are addressed by name, and only
the public half is kept (a private key Berth generates is handed out once, never stored)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import key_pairs
from berth.compute.db.errors import Duplicate


def create(
    conn: Connection, user_id: str, name: str, type_: str, fingerprint: str, public_key: str
) -> RowMapping:
    """Add a user's key pair; :class:`Duplicate` when the user has one of that name."""
    inserted = try_insert(
        conn,
        key_pairs.insert().values(
            user_id=user_id,
            name=name,
            type=type_,
            fingerprint=fingerprint,
            public_key=public_key,
        ),
    )
    if not inserted:
        raise Duplicate("key pair", name)
    row = get(conn, user_id, name)
    assert row is not None
    return row


def get(conn: Connection, user_id: str, name: str) -> RowMapping | None:
    query = sa.select(key_pairs).where(key_pairs.c.user_id == user_id, key_pairs.c.name == name)
    return conn.execute(query).mappings().first()


def list_keypairs(conn: Connection, user_id: str) -> list[RowMapping]:
    """A user's key pairs, oldest first (the order pages follow)."""
    query = sa.select(key_pairs).where(key_pairs.c.user_id == user_id).order_by(key_pairs.c.id)
    return list(conn.execute(query).mappings())


def delete(conn: Connection, user_id: str, name: str) -> bool:
    """False when the user had no key pair of that name."""
    result = conn.execute(
        key_pairs.delete().where(key_pairs.c.user_id == user_id, key_pairs.c.name == name)
    )
    return result.rowcount > 0

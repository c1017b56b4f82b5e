"""Aggregates a provider belongs to.

An aggregate is only a uuid: it comes into being the first time a provider joins it and is never
validated against anything outside placement.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.placement.store import providers
from berth.placement.store.links import replace_links
from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import placement_aggregates, resource_provider_aggregates


def of_provider(conn: Connection, provider_id: int) -> list[str]:
    """The uuids of the provider's aggregates, oldest aggregate first."""
    agg, link = placement_aggregates, resource_provider_aggregates
    rows = conn.scalars(
        sa.select(agg.c.uuid)
        .join(link, link.c.aggregate_id == agg.c.id)
        .where(link.c.resource_provider_id == provider_id)
        .order_by(agg.c.id)
    )
    return list(rows)


def replace(
    conn: Connection, provider: ResourceProvider, uuids: Sequence[str], *, bump: bool
) -> int:
    """Make ``uuids`` exactly the provider's aggregates; returns the provider's generation.

    From 1.19 (``bump``) the generation moves on every write, changed or not, as upstream's does.
    """
    link, provider_id = resource_provider_aggregates, provider.id
    # Created in the order given, so that the list reads back in that order.
    wanted = {_ensure(conn, uuid) for uuid in dict.fromkeys(uuids)}
    replace_links(conn, link, "aggregate_id", provider_id, wanted)
    return providers.bump_generation(conn, provider) if bump else provider.generation


def _ensure(conn: Connection, uuid: str) -> int:
    """The id of the aggregate with this uuid, created if it is new."""
    agg = placement_aggregates
    found = conn.scalar(sa.select(agg.c.id).where(agg.c.uuid == uuid))
    if found is not None:
        return int(found)
    try:
        # A savepoint, so that losing a race to create the same aggregate keeps the transaction.
        with conn.begin_nested():
            return int(conn.execute(agg.insert().values(uuid=uuid)).inserted_primary_key[0])
    except IntegrityError:
        return int(conn.scalar(sa.select(agg.c.id).where(agg.c.uuid == uuid)))

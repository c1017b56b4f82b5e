"""Subnets and the addresses allocated on them, in the network database."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.network.store import rbac
from berth.network.store.remembered import remembered
from berth.network.store.schema import ip_allocations, subnets

# Built once, as a port request runs them (see ``store.ports``).
_OF_NETWORKS = (
    sa.select(subnets)
    .where(subnets.c.network_id.in_(sa.bindparam("network_ids", expanding=True)))
    .order_by(subnets.c.created_at, subnets.c.id)
)
_USED = sa.select(ip_allocations.c.ip_address).where(
    ip_allocations.c.subnet_id == sa.bindparam("subnet_id")
)


def insert(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(subnets.insert().values(revision_number=0, created_at=utcnow(), **values))


def get(conn: Connection, subnet_id: str) -> RowMapping | None:
    return conn.execute(sa.select(subnets).where(subnets.c.id == subnet_id)).mappings().first()


def list_visible(conn: Connection, visible_to: str | None) -> list[RowMapping]:
    """Subnets a project owns or that are on networks shared with it through RBAC (all when
    ``visible_to`` is None)."""
    query = sa.select(subnets).order_by(subnets.c.id)
    if visible_to is not None:
        shared = rbac.granted_to("network", "access_as_shared", visible_to)
        query = query.where(
            sa.or_(subnets.c.project_id == visible_to, subnets.c.network_id.in_(shared))
        )
    return list(conn.execute(query).mappings())


@remembered
def of_networks(conn: Connection, network_ids: Collection[str]) -> list[RowMapping]:
    return list(conn.execute(_OF_NETWORKS, {"network_ids": list(network_ids)}).mappings())


def update(conn: Connection, subnet_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(
        subnets.update()
        .where(subnets.c.id == subnet_id)
        .values(updated_at=utcnow(), revision_number=subnets.c.revision_number + 1, **values)
    )


def delete(conn: Connection, subnet_id: str) -> None:
    conn.execute(subnets.delete().where(subnets.c.id == subnet_id))


def release_addresses(conn: Connection, subnet_id: str) -> None:
    """Every port's address on the subnet, released."""
    conn.execute(ip_allocations.delete().where(ip_allocations.c.subnet_id == subnet_id))


def used_addresses(conn: Connection, subnet_id: str) -> list[str]:
    # On the driver's cursor, fetched at once: a port's address takes every used one of its
    # subnet, and SQLAlchemy's rows (a third of the read with 300 addresses) add nothing to text
    # that no backend processes.
    return [address for (address,) in direct.execute(conn, _USED, {"subnet_id": subnet_id}).rows]


def used_counts(conn: Connection, subnet_ids: Collection[str]) -> dict[str, int]:
    query = (
        sa.select(ip_allocations.c.subnet_id, sa.func.count())
        .where(ip_allocations.c.subnet_id.in_(list(subnet_ids)))
        .group_by(ip_allocations.c.subnet_id)
    )
    return {subnet_id: int(count) for subnet_id, count in conn.execute(query)}

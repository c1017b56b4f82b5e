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


def _used_span() -> sa.Select[tuple[int, int | None]]:
    """How many offsets from ``first`` to ``last`` are used, and the highest of them: when
    they are as many as the span up to the highest, none below it is free. (The count steps
    through the index, ten times faster than probing for each next offset; the highest is
    one seek.)"""
    in_range = (
        ip_allocations.c.subnet_id == sa.bindparam("subnet_id"),
        ip_allocations.c.ip_offset.between(sa.bindparam("first"), sa.bindparam("last")),
    )
    count = sa.select(sa.func.count()).where(*in_range).scalar_subquery()
    highest = sa.select(sa.func.max(ip_allocations.c.ip_offset)).where(*in_range)
    return sa.select(count, highest.scalar_subquery())


def _lowest_gap() -> sa.Select[tuple[int]]:
    """The lowest offset from ``first`` to ``last`` with no address row of the subnet: ``first``
    itself, or the one after the lowest used offset whose next is unused. The index on
    (subnet, offset) walks the used ones in order and stops at the first gap."""
    taken, other = ip_allocations.alias("taken"), ip_allocations.alias("other")
    subnet, first = sa.bindparam("subnet_id"), sa.bindparam("first")
    first_used = sa.exists().where(taken.c.subnet_id == subnet, taken.c.ip_offset == first)
    next_free = ~sa.exists().where(
        other.c.subnet_id == subnet, other.c.ip_offset == taken.c.ip_offset + 1
    )
    after_run = (
        sa.select(taken.c.ip_offset + 1)
        .where(
            taken.c.subnet_id == subnet,
            taken.c.ip_offset >= first,
            taken.c.ip_offset < sa.bindparam("last"),
            next_free,
        )
        .order_by(taken.c.ip_offset)
        .limit(1)
        .scalar_subquery()
    )
    return sa.select(sa.case((first_used, after_run), else_=first))


_USED_SPAN = _used_span()
_LOWEST_GAP = _lowest_gap()


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


def lowest_unused(conn: Connection, subnet_id: str, first: int, last: int) -> int | None:
    """The lowest offset from ``first`` to ``last`` that no address of the subnet has, None when
    each has one (see ``ipam.allocate_lowest_by_search``)."""
    params = {"subnet_id": subnet_id, "first": first, "last": last}
    ((count, highest),) = direct.execute(conn, _USED_SPAN, params).rows
    if not count:
        return first
    if count == highest - first + 1:
        # Addresses taken one after another and none released since: the usual subnet.
        return int(highest) + 1 if highest < last else None
    found = direct.execute(conn, _LOWEST_GAP, params).scalar()
    return None if found is None else int(found)


def used_counts(conn: Connection, subnet_ids: Collection[str]) -> dict[str, int]:
    query = (
        sa.select(ip_allocations.c.subnet_id, sa.func.count())
        .where(ip_allocations.c.subnet_id.in_(list(subnet_ids)))
        .group_by(ip_allocations.c.subnet_id)
    )
    return {subnet_id: int(count) for subnet_id, count in conn.execute(query)}

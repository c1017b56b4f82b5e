"""Usages: what is allocated, per provider and per project (and user, and consumer type)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.placement.store.providers import ResourceProvider
from berth.placement.store.schema import (
    allocations,
    consumer_types,
    consumers,
    inventories,
    projects,
    resource_classes,
    users,
)

# How consumers without a type are named in grouped usages (1.38).
UNKNOWN_TYPE = "unknown"
ALL_TYPES = "all"


@dataclass(frozen=True, slots=True)
class TypedUsage:
    """Usage of one consumer type: amount per class and how many consumers hold it."""

    consumer_type: str
    usages: dict[str, int]
    consumer_count: int


def for_provider(conn: Connection, provider: ResourceProvider) -> dict[str, int]:
    """Every class the provider has inventory of, with the amount allocated (0 when none)."""
    inv, a, rc = inventories, allocations, resource_classes
    rows = conn.execute(
        sa.select(rc.c.name, sa.func.coalesce(sa.func.sum(a.c.used), 0))
        .select_from(inv)
        .join(rc, rc.c.id == inv.c.resource_class_id)
        .outerjoin(
            a,
            sa.and_(
                a.c.resource_provider_id == inv.c.resource_provider_id,
                a.c.resource_class_id == inv.c.resource_class_id,
            ),
        )
        .where(inv.c.resource_provider_id == provider.id)
        .group_by(rc.c.name)
    )
    return {name: int(used) for name, used in rows}


def _project_allocations(project_id: str, user_id: str | None) -> sa.Select[tuple[object, ...]]:
    """Allocations of the project's (and user's) consumers, joined to their consumer."""
    a, c, p, u = allocations, consumers, projects, users
    query = (
        sa.select()
        .select_from(a)
        .join(c, c.c.uuid == a.c.consumer_id)
        .join(p, p.c.id == c.c.project_id)
        .where(p.c.external_id == project_id)
    )
    if user_id:
        query = query.join(u, u.c.id == c.c.user_id).where(u.c.external_id == user_id)
    return query


def for_project(conn: Connection, project_id: str, user_id: str | None) -> dict[str, int]:
    """Total allocated per class to a project's (or one of its users') consumers."""
    a, rc = allocations, resource_classes
    query = (
        _project_allocations(project_id, user_id)
        .add_columns(rc.c.name, sa.func.sum(a.c.used))
        .join(rc, rc.c.id == a.c.resource_class_id)
        .group_by(rc.c.name)
    )
    return {name: int(used) for name, used in conn.execute(query)}


def for_project_by_type(
    conn: Connection, project_id: str, user_id: str | None, consumer_type: str | None
) -> list[TypedUsage]:
    """Usages grouped by consumer type (1.38).

    ``consumer_type`` filters to one type; ``all`` folds every consumer into one group and
    ``unknown`` keeps only consumers without a type, in a group of that name.
    """
    a, c, ct, rc = allocations, consumers, consumer_types, resource_classes
    base = _project_allocations(project_id, user_id).outerjoin(ct, ct.c.id == c.c.consumer_type_id)
    if consumer_type == UNKNOWN_TYPE:
        base = base.where(c.c.consumer_type_id.is_(None))
    elif consumer_type and consumer_type != ALL_TYPES:
        base = base.where(ct.c.name == consumer_type)
    folded = consumer_type in (ALL_TYPES, UNKNOWN_TYPE)
    group = sa.literal(consumer_type) if folded else sa.func.coalesce(ct.c.name, UNKNOWN_TYPE)
    counts = conn.execute(
        base.add_columns(group.label("type"), sa.func.count(sa.distinct(a.c.consumer_id))).group_by(
            group
        )
    )
    amounts = conn.execute(
        base.add_columns(group.label("type"), rc.c.name, sa.func.sum(a.c.used))
        .join(rc, rc.c.id == a.c.resource_class_id)
        .group_by(group, rc.c.name)
    )
    usages: dict[str, dict[str, int]] = {}
    for type_name, rc_name, used in amounts:
        usages.setdefault(type_name, {})[rc_name] = int(used)
    return [
        TypedUsage(consumer_type=type_name, usages=usages.get(type_name, {}), consumer_count=count)
        for type_name, count in counts
        if type_name in usages
    ]

"""RBAC policies (grants of an object to other projects) in the network database."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.network.store.remembered import remembered
from berth.network.store.schema import rbac_policies

WILDCARD = "*"


def insert(conn: Connection, values: Mapping[str, Any]) -> bool:
    """Add an entry; False when the same grant exists already."""
    try:
        with conn.begin_nested():
            conn.execute(rbac_policies.insert().values(**values))
    except IntegrityError:
        return False
    return True


def get(conn: Connection, entry_id: str) -> RowMapping | None:
    query = sa.select(rbac_policies).where(rbac_policies.c.id == entry_id)
    return conn.execute(query).mappings().first()


def list_entries(conn: Connection, owner: str | None) -> list[RowMapping]:
    """Entries a project made (every entry when ``owner`` is None)."""
    query = sa.select(rbac_policies)
    if owner is not None:
        query = query.where(rbac_policies.c.project_id == owner)
    return list(conn.execute(query.order_by(rbac_policies.c.id)).mappings())


def of_object(conn: Connection, object_type: str, object_id: str, action: str) -> list[RowMapping]:
    query = sa.select(rbac_policies).where(
        rbac_policies.c.object_type == object_type,
        rbac_policies.c.object_id == object_id,
        rbac_policies.c.action == action,
    )
    return list(conn.execute(query.order_by(rbac_policies.c.id)).mappings())


def granted_to(object_type: str, action: str, project: str) -> sa.Select[tuple[str]]:
    """The ids of objects of a type granted to ``project`` or to every project (a subquery)."""
    return sa.select(rbac_policies.c.object_id).where(
        rbac_policies.c.object_type == object_type,
        rbac_policies.c.action == action,
        rbac_policies.c.target_project.in_([WILDCARD, project]),
    )


def granted_ids(
    conn: Connection, object_type: str, action: str, project: str, ids: Collection[str]
) -> set[str]:
    """Which of ``ids`` are granted to ``project`` or to every project."""
    return set(grants(conn, object_type, project, ids).get(action, ()))


@remembered
def grants(
    conn: Connection, object_type: str, project: str, ids: Collection[str]
) -> dict[str, frozenset[str]]:
    """Under each action, which of ``ids`` are granted to ``project`` or to every project: one
    statement answers every action (a network's view asks both shared and external)."""
    if not ids:
        return {}
    values = {"object_type": object_type, "project": project, "ids": list(ids)}
    found: dict[str, set[str]] = {}
    for action, object_id in conn.execute(_GRANTS, values):
        found.setdefault(str(action), set()).add(str(object_id))
    return {action: frozenset(granted) for action, granted in found.items()}


# Built once: every port create and network show asks it of its network (see ``store.ports``).
_GRANTS = sa.select(rbac_policies.c.action, rbac_policies.c.object_id).where(
    rbac_policies.c.object_type == sa.bindparam("object_type"),
    rbac_policies.c.target_project.in_([WILDCARD, sa.bindparam("project")]),
    rbac_policies.c.object_id.in_(sa.bindparam("ids", expanding=True)),
)


def update_target(conn: Connection, entry_id: str, target_project: str) -> bool:
    """Point an entry at another project; False when that grant exists already."""
    try:
        with conn.begin_nested():
            conn.execute(
                rbac_policies.update()
                .where(rbac_policies.c.id == entry_id)
                .values(target_project=target_project)
            )
    except IntegrityError:
        return False
    return True


def delete(conn: Connection, entry_id: str) -> None:
    conn.execute(rbac_policies.delete().where(rbac_policies.c.id == entry_id))


def delete_of_object(conn: Connection, object_type: str, object_id: str) -> None:
    """Every entry of an object (the object goes)."""
    conn.execute(
        rbac_policies.delete().where(
            rbac_policies.c.object_type == object_type, rbac_policies.c.object_id == object_id
        )
    )

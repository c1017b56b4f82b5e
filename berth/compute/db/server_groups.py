"""Server groups and their members, in the API database.

A group knows which servers are in it; which hosts those servers are on is their cells' business
(the scheduler reads it there). Membership is idempotent: adding a server twice keeps one row.
The host each member was admitted to, which conductors check the policy against, is
``group_placements``; a server leaving its group leaves that record too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db import group_placements
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import server_group_members, server_groups
from berth.compute.db.errors import Duplicate


def create(
    conn: Connection,
    uuid: str,
    name: str,
    project_id: str,
    user_id: str,
    policy: str,
    rules: Mapping[str, Any] | None = None,
) -> RowMapping:
    """Add a group; :class:`Duplicate` when the uuid is taken."""
    inserted = try_insert(
        conn,
        server_groups.insert().values(
            uuid=uuid,
            name=name,
            project_id=project_id,
            user_id=user_id,
            policy=policy,
            rules=dict(rules or {}),
        ),
    )
    if not inserted:
        raise Duplicate("server group", uuid)
    group = get(conn, uuid)
    assert group is not None
    return group


def get(conn: Connection, uuid: str) -> RowMapping | None:
    query = sa.select(server_groups).where(server_groups.c.uuid == uuid)
    return conn.execute(query).mappings().first()


def list_groups(conn: Connection, project_id: str | None = None) -> list[RowMapping]:
    """The groups of a project (all when None), oldest first."""
    query = sa.select(server_groups).order_by(server_groups.c.id)
    if project_id is not None:
        query = query.where(server_groups.c.project_id == project_id)
    return list(conn.execute(query).mappings())


def delete(conn: Connection, uuid: str) -> bool:
    """Delete the group and its member list; False when it was gone."""
    result = conn.execute(server_groups.delete().where(server_groups.c.uuid == uuid))
    return result.rowcount > 0


def _id_of(conn: Connection, uuid: str) -> int | None:
    query = sa.select(server_groups.c.id).where(server_groups.c.uuid == uuid)
    return conn.execute(query).scalar()


def add_members(conn: Connection, group_uuid: str, instance_uuids: Collection[str]) -> bool:
    """Put servers in the group (those already in it stay as they are); False when there is no
    such group."""
    group_id = _id_of(conn, group_uuid)
    if group_id is None:
        return False
    present = set(members(conn, group_uuid))
    for instance_uuid in dict.fromkeys(instance_uuids):
        if instance_uuid not in present:
            member = server_group_members.insert().values(
                group_id=group_id, instance_uuid=instance_uuid
            )
            try_insert(conn, member)
    return True


def remove_members(conn: Connection, group_uuid: str, instance_uuids: Collection[str]) -> int:
    """Take servers out of the group; how many were in it."""
    group_id = _id_of(conn, group_uuid)
    if group_id is None:
        return 0
    for instance_uuid in set(members(conn, group_uuid)) & set(instance_uuids):
        group_placements.release(conn, instance_uuid)
    result = conn.execute(
        server_group_members.delete().where(
            server_group_members.c.group_id == group_id,
            server_group_members.c.instance_uuid.in_(list(instance_uuids)),
        )
    )
    return result.rowcount


def remove_instance(conn: Connection, instance_uuid: str) -> int:
    """Take a deleted server out of every group it was in (and forget the host it was admitted
    to); how many."""
    group_placements.release(conn, instance_uuid)
    result = conn.execute(
        server_group_members.delete().where(server_group_members.c.instance_uuid == instance_uuid)
    )
    return result.rowcount


def members(conn: Connection, group_uuid: str) -> list[str]:
    """The group's servers, in the order they joined."""
    query = (
        sa.select(server_group_members.c.instance_uuid)
        .join(server_groups, server_groups.c.id == server_group_members.c.group_id)
        .where(server_groups.c.uuid == group_uuid)
        .order_by(server_group_members.c.id)
    )
    return list(conn.execute(query).scalars())


def group_of(conn: Connection, instance_uuid: str) -> RowMapping | None:
    """The group a server is in, if any (a server is in one group at most)."""
    query = (
        sa.select(server_groups)
        .join(server_group_members, server_groups.c.id == server_group_members.c.group_id)
        .where(server_group_members.c.instance_uuid == instance_uuid)
        .order_by(server_groups.c.id)
    )
    return conn.execute(query).mappings().first()

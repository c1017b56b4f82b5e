"""BuildRequests: servers that have no cell yet, as the API shows them, in the API database.

The super-conductor deletes a server's BuildRequest once it has created the Instance in a cell;
a user deleting the server before that deletes it too. Whoever deletes it second learns so from
:func:`delete`, which is how each side finds out the other got there first.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common.timeutils import utcnow
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import build_requests
from berth.compute.db.errors import Duplicate


def create(
    conn: Connection,
    instance_uuid: str,
    project_id: str,
    user_id: str,
    instance: Mapping[str, Any],
    created_at: dt.datetime | None = None,
) -> None:
    """Store the server as requested; :class:`Duplicate` when it has a BuildRequest already."""
    inserted = try_insert(
        conn,
        build_requests.insert().values(
            instance_uuid=instance_uuid,
            project_id=project_id,
            user_id=user_id,
            instance=dict(instance),
            created_at=created_at or utcnow(),
        ),
    )
    if not inserted:
        raise Duplicate("build request", instance_uuid)


def get(conn: Connection, instance_uuid: str) -> RowMapping | None:
    query = sa.select(build_requests).where(build_requests.c.instance_uuid == instance_uuid)
    return conn.execute(query).mappings().first()


def delete(conn: Connection, instance_uuid: str) -> bool:
    """Delete the BuildRequest; False when it was gone already (deleted by someone else)."""
    result = conn.execute(
        build_requests.delete().where(build_requests.c.instance_uuid == instance_uuid)
    )
    return result.rowcount > 0


def list_build_requests(
    conn: Connection, project_id: str | None = None, created_before: dt.datetime | None = None
) -> list[RowMapping]:
    """The BuildRequests of a project (all when None), oldest first; only those made before
    ``created_before`` when given (stuck ones)."""
    query = sa.select(build_requests).order_by(build_requests.c.created_at, build_requests.c.id)
    if project_id is not None:
        query = query.where(build_requests.c.project_id == project_id)
    if created_before is not None:
        query = query.where(build_requests.c.created_at < created_before)
    return list(conn.execute(query).mappings())

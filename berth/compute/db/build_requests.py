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

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import build_requests
from berth.compute.db.errors import Duplicate

# Built once: every create runs it (see try_insert).
_INSERT = build_requests.insert()
# Built once: every build reads its server's BuildRequest and takes it.
_GET = sa.select(build_requests).where(
    build_requests.c.instance_uuid == sa.bindparam("instance_uuid")
)
_GET_LOCKED = _GET.with_for_update()
_DELETE = build_requests.delete().where(
    build_requests.c.instance_uuid == sa.bindparam("instance_uuid")
)
_DELETE_RETURNING = _DELETE.returning(*build_requests.c)
_INSTANCE = sa.select(build_requests.c.instance).where(
    build_requests.c.instance_uuid == sa.bindparam("instance_uuid")
)
# What a user says of a server, which an update may change (the instance's keys).
_USER_KEYS = ("name", "description", "access_ip_v4", "access_ip_v6")


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
        _INSERT,
        {
            "instance_uuid": instance_uuid,
            "project_id": project_id,
            "user_id": user_id,
            "instance": dict(instance),
            "created_at": created_at or utcnow(),
        },
        on_cursor=True,
    )
    if not inserted:
        raise Duplicate("build request", instance_uuid)


def get(conn: Connection, instance_uuid: str) -> RowMapping | None:
    return conn.execute(_GET, {"instance_uuid": instance_uuid}).mappings().first()


def instance_of(conn: Connection, instance_uuid: str) -> dict[str, Any] | None:
    """The server as requested (the BuildRequest's ``instance``), on the driver's cursor
    (``berth.common.direct``): every build reads it; None when there is no BuildRequest."""
    found = direct.execute(conn, _INSTANCE, {"instance_uuid": instance_uuid}).scalar()
    return None if found is None else dict(found)


def delete(conn: Connection, instance_uuid: str) -> bool:
    """Delete the BuildRequest; False when it was gone already (deleted by someone else)."""
    return conn.execute(_DELETE, {"instance_uuid": instance_uuid}).rowcount > 0


def take(conn: Connection, instance_uuid: str) -> Mapping[str, Any] | None:
    """Delete the BuildRequest and answer it as it was when deleted (an update may have changed
    it since it was read); None when it was gone already. One statement where the database
    answers a delete with the row (RETURNING: SQLite, PostgreSQL, MariaDB)."""
    if conn.dialect.delete_returning:
        taken = direct.execute(conn, _DELETE_RETURNING, {"instance_uuid": instance_uuid}).rows
        return dict(zip(build_requests.c.keys(), taken[0], strict=True)) if taken else None
    found = conn.execute(_GET_LOCKED, {"instance_uuid": instance_uuid}).mappings().first()
    if found is None or not delete(conn, instance_uuid):
        return None
    return found


def update_instance(conn: Connection, instance_uuid: str, changes: Mapping[str, Any]) -> bool:
    """Change the server as requested (a rename, say); False when it has a cell already."""
    query = (
        sa.select(build_requests.c.instance)
        .where(build_requests.c.instance_uuid == instance_uuid)
        .with_for_update()
    )
    instance = conn.execute(query).scalar()
    if instance is None:
        return False
    conn.execute(
        build_requests.update()
        .where(build_requests.c.instance_uuid == instance_uuid)
        .values(instance={**instance, **changes})
    )
    return True


def user_fields(instance: Mapping[str, Any]) -> dict[str, Any]:
    """The Instance columns that say what the user says of the server, from a BuildRequest's
    instance (which an update may change until the server has a cell)."""
    return {
        **as_columns({key: instance.get(key) for key in _USER_KEYS}),
        "auto_disk_config": bool(instance.get("auto_disk_config")),
    }


def as_columns(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Changes named as in a BuildRequest's instance, named as the Instance's columns."""
    return {("display_name" if key == "name" else key): value for key, value in changes.items()}


def list_build_requests(
    conn: Connection,
    project_id: str | None = None,
    created_before: dt.datetime | None = None,
    created_since: dt.datetime | None = None,
) -> list[RowMapping]:
    """The BuildRequests of a project (all when None), oldest first; only those made before
    ``created_before`` when given (stuck ones), at or after ``created_since`` when given (a
    listing's changes-since: a BuildRequest last changed when it was made)."""
    query = sa.select(build_requests).order_by(build_requests.c.created_at, build_requests.c.id)
    if project_id is not None:
        query = query.where(build_requests.c.project_id == project_id)
    if created_before is not None:
        query = query.where(build_requests.c.created_at < created_before)
    if created_since is not None:
        query = query.where(build_requests.c.created_at >= created_since)
    return list(conn.execute(query).mappings().all())

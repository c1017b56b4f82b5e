"""RequestSpecs in the API database: everything the scheduler needs to place a server, kept for
every later move of it. The spec is a JSON document; its shape is the scheduler's
(``berth.compute.objects.request_spec``), not this module's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import request_specs
from berth.compute.db.errors import Duplicate

# Built once: every create runs it (see try_insert).
_INSERT = request_specs.insert()
# Built once: every build reads its server's spec and saves it with the ports, on the driver's
# cursor (``berth.common.direct``). (The uuid's parameter is not named after its column, which
# would make it a value to set.)
_GET = sa.select(request_specs.c.spec).where(request_specs.c.instance_uuid == sa.bindparam("uuid"))
_UPDATE = request_specs.update().where(request_specs.c.instance_uuid == sa.bindparam("uuid"))


def create(conn: Connection, instance_uuid: str, spec: Mapping[str, Any]) -> None:
    """Store a new server's spec (one insert, where :func:`save` first tries an update);
    :class:`Duplicate` when the server has one already."""
    row = {"instance_uuid": instance_uuid, "spec": dict(spec)}
    if not try_insert(conn, _INSERT, row, on_cursor=True):
        raise Duplicate("request spec", instance_uuid)


def save(conn: Connection, instance_uuid: str, spec: Mapping[str, Any]) -> bool:
    """Store the server's spec, replacing the one it had; True when it had none."""
    values = {"uuid": instance_uuid, "spec": dict(spec)}
    if direct.execute(conn, _UPDATE, values).rowcount > 0:
        return False
    if try_insert(conn, _INSERT, {"instance_uuid": instance_uuid, "spec": dict(spec)}, True):
        return True
    # Another writer inserted it between our two statements: ours is the later word.
    direct.execute(conn, _UPDATE, values)
    return False


def get(conn: Connection, instance_uuid: str) -> dict[str, Any] | None:
    spec = direct.execute(conn, _GET, {"uuid": instance_uuid}).scalar()
    return dict(spec) if spec is not None else None


def delete(conn: Connection, instance_uuid: str) -> bool:
    result = conn.execute(
        request_specs.delete().where(request_specs.c.instance_uuid == instance_uuid)
    )
    return result.rowcount > 0

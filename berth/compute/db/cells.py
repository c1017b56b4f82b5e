"""Cells and what is mapped to them, in the API database: CellMappings, HostMappings (which
cell a host is in) and InstanceMappings (which cell a server is in; none while it is a
BuildRequest).

A host is mapped once and stays in its cell: mapping it again, from any cell, changes nothing,
which makes host discovery safe to run twice or from two places at once.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.compute.db._tables import try_insert
from berth.compute.db.api_schema import cell_mappings, host_mappings, instance_mappings
from berth.compute.db.errors import Duplicate, InUse

# cell0, where servers that never got a host are kept, has this uuid in every deployment.
CELL0_UUID = "00000000-0000-0000-0000-000000000000"
CELL0_NAME = "cell0"

_CELL_FIELDS = frozenset({"name", "database_url", "transport_url", "disabled"})


# Cell mappings


def create_cell(
    conn: Connection,
    uuid: str,
    name: str,
    database_url: str,
    transport_url: str,
    disabled: bool = False,
) -> RowMapping:
    """Add a cell; :class:`Duplicate` when its uuid or its name is taken."""
    inserted = try_insert(
        conn,
        cell_mappings.insert().values(
            uuid=uuid,
            name=name,
            database_url=database_url,
            transport_url=transport_url,
            disabled=disabled,
        ),
    )
    if not inserted:
        if get_cell(conn, uuid) is not None:
            raise Duplicate("cell uuid", uuid)
        raise Duplicate("cell name", name)
    cell = get_cell(conn, uuid)
    assert cell is not None
    return cell


# Built once: every build reads its host's cell.
_CELL_BY_UUID = sa.select(cell_mappings).where(cell_mappings.c.uuid == sa.bindparam("uuid"))


def get_cell(conn: Connection, uuid: str) -> RowMapping | None:
    return conn.execute(_CELL_BY_UUID, {"uuid": uuid}).mappings().first()


def get_cell_by_id(conn: Connection, cell_id: int) -> RowMapping | None:
    query = sa.select(cell_mappings).where(cell_mappings.c.id == cell_id)
    return conn.execute(query).mappings().first()


def get_cell_by_name(conn: Connection, name: str) -> RowMapping | None:
    query = sa.select(cell_mappings).where(cell_mappings.c.name == name)
    return conn.execute(query).mappings().first()


# Built once: every listing of servers reads the cells (see list_instance_cells).
_CELLS = sa.select(cell_mappings).order_by(cell_mappings.c.id)
_CELLS_BUT_CELL0 = _CELLS.where(cell_mappings.c.uuid != CELL0_UUID)


def list_cells(conn: Connection, include_cell0: bool = True) -> list[dict[str, Any]]:
    """Every cell, in the order they were created (cell0 first when it was made first)."""
    return direct.mappings(conn, _CELLS if include_cell0 else _CELLS_BUT_CELL0)


def update_cell(conn: Connection, uuid: str, values: Mapping[str, Any]) -> bool:
    """Change a cell's name, URLs or ``disabled``; False when there is no such cell,
    :class:`Duplicate` when the new name is another cell's."""
    unknown = set(values) - _CELL_FIELDS
    if unknown:
        raise ValueError(f"cells have no updatable fields {sorted(unknown)}")
    statement = cell_mappings.update().where(cell_mappings.c.uuid == uuid).values(**values)
    try:
        with conn.begin_nested():
            result = conn.execute(statement)
    except IntegrityError:
        raise Duplicate("cell name", values.get("name")) from None
    return result.rowcount > 0


def delete_cell(conn: Connection, uuid: str) -> bool:
    """Remove an empty cell; False when there is no such cell, :class:`InUse` while hosts or
    instances are mapped to it."""
    cell = get_cell(conn, uuid)
    if cell is None:
        return False
    if hosts_of_cell(conn, cell["id"]):
        raise InUse(f"cell {uuid} has hosts")
    mapped = sa.select(instance_mappings.c.id).where(instance_mappings.c.cell_id == cell["id"])
    if conn.execute(mapped.limit(1)).first() is not None:
        raise InUse(f"cell {uuid} has instances")
    conn.execute(cell_mappings.delete().where(cell_mappings.c.id == cell["id"]))
    return True


# Host mappings


@dataclass(frozen=True, slots=True)
class HostMapping:
    host: str
    cell_id: int
    # False when the host was mapped already (to this cell or, unchanged, to another).
    created: bool


def map_host(conn: Connection, host: str, cell_id: int) -> HostMapping:
    """Put ``host`` in the cell, unless it is in a cell already; either way, say where it is."""
    created = try_insert(conn, host_mappings.insert().values(host=host, cell_id=cell_id))
    where = cell_of_host(conn, host)
    assert where is not None
    return HostMapping(host=host, cell_id=where, created=created)


def map_hosts(conn: Connection, wanted: Mapping[str, int]) -> None:
    """``map_host`` for many hosts (host -> cell id): the mappings read once, the missing ones
    written in one statement."""
    mapped = host_cells(conn)
    missing = [{"host": h, "cell_id": c} for h, c in wanted.items() if h not in mapped]
    if not missing:
        return
    try:
        with conn.begin_nested():
            conn.execute(host_mappings.insert(), missing)
    except IntegrityError:
        # Some were mapped meanwhile (by discover_hosts, say): each in turn, as map_host does.
        for row in missing:
            map_host(conn, row["host"], row["cell_id"])


def cell_of_host(conn: Connection, host: str) -> int | None:
    """The id of the host's cell, or None for an unmapped host."""
    query = sa.select(host_mappings.c.cell_id).where(host_mappings.c.host == host)
    return conn.execute(query).scalar()


def hosts_of_cell(conn: Connection, cell_id: int) -> list[str]:
    query = (
        sa.select(host_mappings.c.host)
        .where(host_mappings.c.cell_id == cell_id)
        .order_by(host_mappings.c.host)
    )
    return list(conn.execute(query).scalars())


def host_cells(conn: Connection) -> dict[str, int]:
    """Every mapped host and its cell's id."""
    query = sa.select(host_mappings.c.host, host_mappings.c.cell_id)
    return {host: cell_id for host, cell_id in conn.execute(query)}


def unmap_host(conn: Connection, host: str) -> bool:
    """Forget the host's cell (the host is gone); False when it was not mapped."""
    result = conn.execute(host_mappings.delete().where(host_mappings.c.host == host))
    return result.rowcount > 0


# Instance mappings

# An instance mapping with its cell's uuid and name (both None while it has no cell).
_MAPPING = (
    sa.select(
        instance_mappings,
        cell_mappings.c.uuid.label("cell_uuid"),
        cell_mappings.c.name.label("cell_name"),
    )
    .select_from(instance_mappings)
    .outerjoin(cell_mappings, cell_mappings.c.id == instance_mappings.c.cell_id)
)


# Built once: every create of a server runs it (see try_insert).
_INSERT_INSTANCE_MAPPING = instance_mappings.insert()
# Built once (and run on the driver's cursor, ``berth.common.direct``): every build points its
# server at a cell (``uuid`` is not named after its column, which would make it a value to set).
_SET_CELL = instance_mappings.update().where(
    instance_mappings.c.instance_uuid == sa.bindparam("uuid")
)


def create_instance_mapping(
    conn: Connection, instance_uuid: str, project_id: str, user_id: str
) -> None:
    """Map a new server to no cell yet; :class:`Duplicate` when it is mapped already."""
    inserted = try_insert(
        conn,
        _INSERT_INSTANCE_MAPPING,
        {
            "instance_uuid": instance_uuid,
            "project_id": project_id,
            "user_id": user_id,
            "queued_for_delete": False,
        },
        on_cursor=True,
    )
    if not inserted:
        raise Duplicate("instance mapping", instance_uuid)


def set_instance_cell(conn: Connection, instance_uuid: str, cell_id: int) -> bool:
    """Point the server at its cell; False when it has no mapping (it was deleted)."""
    values = {"uuid": instance_uuid, "cell_id": cell_id}
    return direct.execute(conn, _SET_CELL, values).rowcount > 0


def get_instance_mapping(conn: Connection, instance_uuid: str) -> RowMapping | None:
    """The mapping's columns plus ``cell_uuid`` and ``cell_name``."""
    query = _MAPPING.where(instance_mappings.c.instance_uuid == instance_uuid)
    return conn.execute(query).mappings().first()


def queue_instance_for_delete(conn: Connection, instance_uuid: str) -> bool:
    """Mark the server as being deleted, so lists skip it; False when it was marked already
    or has no mapping (a concurrent delete got there first)."""
    result = conn.execute(
        instance_mappings.update()
        .where(
            instance_mappings.c.instance_uuid == instance_uuid,
            instance_mappings.c.queued_for_delete == sa.false(),
        )
        .values(queued_for_delete=True)
    )
    return result.rowcount > 0


def delete_instance_mapping(conn: Connection, instance_uuid: str) -> bool:
    result = conn.execute(
        instance_mappings.delete().where(instance_mappings.c.instance_uuid == instance_uuid)
    )
    return result.rowcount > 0


# What a listing of servers reads of every mapping, built once: a poller lists several times
# a second, and building the statement cost about as much as SQLite's work on it.
_INSTANCE_CELLS = sa.select(
    instance_mappings.c.instance_uuid, instance_mappings.c.id, instance_mappings.c.cell_id
).order_by(instance_mappings.c.id)
_INSTANCE_CELLS_OF_PROJECT = _INSTANCE_CELLS.where(
    instance_mappings.c.project_id == sa.bindparam("project_id")
)


def list_instance_cells(
    conn: Connection, project_id: str | None = None
) -> list[tuple[str, int, int | None]]:
    """Every mapping of a project (of all projects when None), queued for delete or not, as
    ``(instance_uuid, id, cell_id)``: what a listing of servers needs of each, read without
    the cell's join and as plain rows."""
    # On the driver's cursor (``berth.common.direct``): the rows as the driver fetches them.
    if project_id is None:
        found = direct.execute(conn, _INSTANCE_CELLS)
    else:
        found = direct.execute(conn, _INSTANCE_CELLS_OF_PROJECT, {"project_id": project_id})
    return [(uuid, mapping_id, cell_id) for uuid, mapping_id, cell_id in found.rows]


# A listing's few servers are looked up one by one (each a statement on the cursor, built once);
# past this many, the project's whole list costs less.
_LOOKUPS = 32
_INSTANCE_CELL = _INSTANCE_CELLS.where(instance_mappings.c.instance_uuid == sa.bindparam("uuid"))
_INSTANCE_CELL_OF_PROJECT = _INSTANCE_CELL.where(
    instance_mappings.c.project_id == sa.bindparam("project_id")
)
_CELLS_HOLDING = sa.select(instance_mappings.c.cell_id).distinct()
_CELLS_HOLDING_PROJECT = _CELLS_HOLDING.where(
    instance_mappings.c.project_id == sa.bindparam("project_id")
)


def instance_cells_of(
    conn: Connection, uuids: Collection[str], project_id: str | None
) -> dict[str, tuple[int, int | None]]:
    """:func:`list_instance_cells` of these servers of the project (of any when None) only, by
    uuid: ``(id, cell_id)`` of each that has a mapping."""
    if len(uuids) > _LOOKUPS:
        mapped = list_instance_cells(conn, project_id)
        return {
            uuid: (mapping_id, cell_id) for uuid, mapping_id, cell_id in mapped if uuid in uuids
        }
    found: dict[str, tuple[int, int | None]] = {}
    for uuid in uuids:
        if project_id is None:
            rows = direct.execute(conn, _INSTANCE_CELL, {"uuid": uuid}).rows
        else:
            params = {"uuid": uuid, "project_id": project_id}
            rows = direct.execute(conn, _INSTANCE_CELL_OF_PROJECT, params).rows
        for _, mapping_id, cell_id in rows:
            found[uuid] = (mapping_id, cell_id)
    return found


def cells_holding(conn: Connection, project_id: str | None) -> set[int | None]:
    """The ids of the cells that hold a server of the project (of any when None), None among
    them when a server has no cell yet: which cells a listing need ask."""
    if project_id is None:
        found = direct.execute(conn, _CELLS_HOLDING)
    else:
        found = direct.execute(conn, _CELLS_HOLDING_PROJECT, {"project_id": project_id})
    return {cell_id for (cell_id,) in found.rows}


def list_instance_mappings(
    conn: Connection,
    project_id: str | None = None,
    cell_id: int | None = None,
    include_queued_for_delete: bool = False,
) -> list[RowMapping]:
    """Mappings (of one project, of one cell, or all), oldest first, with their cells."""
    query = _MAPPING.order_by(instance_mappings.c.created_at, instance_mappings.c.id)
    if project_id is not None:
        query = query.where(instance_mappings.c.project_id == project_id)
    if cell_id is not None:
        query = query.where(instance_mappings.c.cell_id == cell_id)
    if not include_queued_for_delete:
        query = query.where(instance_mappings.c.queued_for_delete == sa.false())
    return list(conn.execute(query).mappings())

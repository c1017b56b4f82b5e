"""Flavors, their extra specs and which projects may use a private one, in the API database.

Flavors are addressed by ``flavorid``, the id clients see; the integer ``id`` stays inside the
database. A flavor's extra specs and project access go with it when it is deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.compute.db._tables import first_of, try_insert
from berth.compute.db.api_schema import flavor_extra_specs, flavor_projects, flavors
from berth.compute.db.errors import Duplicate


def create(
    conn: Connection,
    flavorid: str,
    name: str,
    vcpus: int,
    memory_mb: int,
    root_gb: int = 0,
    ephemeral_gb: int = 0,
    swap: int = 0,
    rxtx_factor: float = 1.0,
    is_public: bool = True,
    disabled: bool = False,
    description: str | None = None,
) -> RowMapping:
    """Add a flavor; :class:`Duplicate` when its flavor id or its name is taken."""
    inserted = try_insert(
        conn,
        flavors.insert().values(
            flavorid=flavorid,
            name=name,
            vcpus=vcpus,
            memory_mb=memory_mb,
            root_gb=root_gb,
            ephemeral_gb=ephemeral_gb,
            swap=swap,
            rxtx_factor=rxtx_factor,
            is_public=is_public,
            disabled=disabled,
            description=description,
        ),
    )
    if not inserted:
        if get(conn, flavorid) is not None:
            raise Duplicate("flavor id", flavorid)
        raise Duplicate("flavor name", name)
    flavor = get(conn, flavorid)
    assert flavor is not None
    return flavor


# Built once: every create of a server runs these (a statement built per call cost more to
# make and to key for SQLAlchemy's cache than the database took to answer it).
_BY_FLAVORID = sa.select(flavors).where(flavors.c.flavorid == sa.bindparam("flavorid"))
_EXTRA_SPECS = (
    sa.select(flavor_extra_specs.c.key, flavor_extra_specs.c.value)
    .join(flavors, flavors.c.id == flavor_extra_specs.c.flavor_id)
    .where(flavors.c.flavorid == sa.bindparam("flavorid"))
    .order_by(flavor_extra_specs.c.key)
)


def get(conn: Connection, flavorid: str) -> Mapping[str, Any] | None:
    return first_of(conn, _BY_FLAVORID, {"flavorid": flavorid})


def get_by_name(conn: Connection, name: str) -> RowMapping | None:
    query = sa.select(flavors).where(flavors.c.name == name)
    return conn.execute(query).mappings().first()


def list_flavors(
    conn: Connection,
    visible_to: str | None = None,
    is_public: bool | None = None,
    min_memory_mb: int | None = None,
    min_root_gb: int | None = None,
    include_disabled: bool = False,
) -> list[RowMapping]:
    """Flavors ordered by flavor id: those a project may use (public ones and the private ones
    it was given) or all when ``visible_to`` is None, narrowed by ``is_public`` and minimums."""
    query = sa.select(flavors).order_by(flavors.c.flavorid)
    if visible_to is not None:
        granted = sa.select(flavor_projects.c.flavor_id).where(
            flavor_projects.c.project_id == visible_to
        )
        query = query.where(sa.or_(flavors.c.is_public == sa.true(), flavors.c.id.in_(granted)))
    if is_public is not None:
        query = query.where(flavors.c.is_public == is_public)
    if min_memory_mb is not None:
        query = query.where(flavors.c.memory_mb >= min_memory_mb)
    if min_root_gb is not None:
        query = query.where(flavors.c.root_gb >= min_root_gb)
    if not include_disabled:
        query = query.where(flavors.c.disabled == sa.false())
    return list(conn.execute(query).mappings())


def update_description(conn: Connection, flavorid: str, description: str | None) -> bool:
    """The one thing a flavor lets change (2.55); False when there is no such flavor."""
    result = conn.execute(
        flavors.update().where(flavors.c.flavorid == flavorid).values(description=description)
    )
    return result.rowcount > 0


def delete(conn: Connection, flavorid: str) -> bool:
    """Delete the flavor with its extra specs and access list; False when it was gone."""
    result = conn.execute(flavors.delete().where(flavors.c.flavorid == flavorid))
    return result.rowcount > 0


def _id_of(conn: Connection, flavorid: str) -> int | None:
    return conn.execute(sa.select(flavors.c.id).where(flavors.c.flavorid == flavorid)).scalar()


# Extra specs


def extra_specs(conn: Connection, flavorid: str) -> dict[str, str]:
    return dict(direct.execute(conn, _EXTRA_SPECS, {"flavorid": flavorid}).rows)


def set_extra_specs(conn: Connection, flavorid: str, specs: Mapping[str, str]) -> bool:
    """Add or replace these extra specs (others stay); False when there is no such flavor."""
    flavor_id = _id_of(conn, flavorid)
    if flavor_id is None:
        return False
    for key, value in specs.items():
        row = flavor_extra_specs.c.flavor_id == flavor_id, flavor_extra_specs.c.key == key
        updated = conn.execute(flavor_extra_specs.update().where(*row).values(value=value))
        if updated.rowcount == 0:
            new = flavor_extra_specs.insert().values(flavor_id=flavor_id, key=key, value=value)
            if not try_insert(conn, new):
                conn.execute(flavor_extra_specs.update().where(*row).values(value=value))
    return True


def delete_extra_spec(conn: Connection, flavorid: str, key: str) -> bool:
    """False when the flavor has no such extra spec (or there is no such flavor)."""
    flavor_id = _id_of(conn, flavorid)
    if flavor_id is None:
        return False
    result = conn.execute(
        flavor_extra_specs.delete().where(
            flavor_extra_specs.c.flavor_id == flavor_id, flavor_extra_specs.c.key == key
        )
    )
    return result.rowcount > 0


# Access to private flavors


def projects_of(conn: Connection, flavorid: str) -> list[str]:
    """The projects given access to the flavor."""
    query = (
        sa.select(flavor_projects.c.project_id)
        .join(flavors, flavors.c.id == flavor_projects.c.flavor_id)
        .where(flavors.c.flavorid == flavorid)
        .order_by(flavor_projects.c.project_id)
    )
    return list(conn.execute(query).scalars())


def add_project(conn: Connection, flavorid: str, project_id: str) -> bool:
    """Give a project access; False when it had access already (or there is no such flavor)."""
    flavor_id = _id_of(conn, flavorid)
    if flavor_id is None:
        return False
    grant = flavor_projects.insert().values(flavor_id=flavor_id, project_id=project_id)
    return try_insert(conn, grant)


def remove_project(conn: Connection, flavorid: str, project_id: str) -> bool:
    """Take a project's access away; False when it had none."""
    flavor_id = _id_of(conn, flavorid)
    if flavor_id is None:
        return False
    result = conn.execute(
        flavor_projects.delete().where(
            flavor_projects.c.flavor_id == flavor_id, flavor_projects.c.project_id == project_id
        )
    )
    return result.rowcount > 0


def is_visible_to(conn: Connection, flavorid: str, project_id: str) -> bool:
    """Whether the project may use the flavor (public, or given access)."""
    flavor = get(conn, flavorid)
    if flavor is None:
        return False
    return bool(flavor["is_public"]) or project_id in projects_of(conn, flavorid)


def with_extra_specs(conn: Connection, flavorids: Collection[str]) -> dict[str, dict[str, str]]:
    """The extra specs of several flavors at once (a flavor without any maps to ``{}``)."""
    found: dict[str, dict[str, str]] = {flavorid: {} for flavorid in flavorids}
    query = (
        sa.select(flavors.c.flavorid, flavor_extra_specs.c.key, flavor_extra_specs.c.value)
        .join(flavors, flavors.c.id == flavor_extra_specs.c.flavor_id)
        .where(flavors.c.flavorid.in_(list(flavorids)))
    )
    for flavorid, key, value in conn.execute(query):
        found[flavorid][key] = value
    return found

"""The images of the Image API, with the metadata scheduling reads (minimums, properties such
as ``hw_architecture`` or ``trait:*``), in the API database, which the compute API reads too.
An image's data is not here: the Image API keeps it in its data store (``berth.image.data``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db._tables import first_of, try_insert
from berth.compute.db.api_schema import images
from berth.compute.db.errors import Duplicate

_FIELDS = frozenset(
    {
        "name",
        "status",
        "visibility",
        "min_disk",
        "min_ram",
        "disk_format",
        "container_format",
        "size",
        "owner",
        "properties",
    }
)


def create(conn: Connection, image_id: str, values: Mapping[str, Any]) -> RowMapping:
    """Register an image; the columns not given take their defaults (an active public image
    with no properties). :class:`Duplicate` when the id is taken."""
    _check_fields(values)
    row = {"properties": {}, **values, "id": image_id}
    if not try_insert(conn, images.insert().values(**row)):
        raise Duplicate("image", image_id)
    image = get(conn, image_id)
    assert image is not None
    return image


# Built once: every create of a server runs it (see flavors.get).
_BY_ID = sa.select(images).where(images.c.id == sa.bindparam("image_id"))


def get(conn: Connection, image_id: str) -> Mapping[str, Any] | None:
    return first_of(conn, _BY_ID, {"image_id": image_id})


def list_images(conn: Connection, visible_to: str | None = None) -> list[RowMapping]:
    """Images by name then id: those a project may see (public and community ones, its own) or
    all when ``visible_to`` is None."""
    query = sa.select(images).order_by(images.c.name, images.c.id)
    if visible_to is not None:
        query = query.where(
            sa.or_(images.c.visibility.in_(["public", "community"]), images.c.owner == visible_to)
        )
    return list(conn.execute(query).mappings())


def update(conn: Connection, image_id: str, values: Mapping[str, Any]) -> bool:
    """Change some of an image's columns (``properties`` is replaced whole); False when there
    is no such image."""
    _check_fields(values)
    result = conn.execute(images.update().where(images.c.id == image_id).values(**values))
    return result.rowcount > 0


def update_if(
    conn: Connection, image_id: str, statuses: Sequence[str], values: Mapping[str, Any]
) -> bool:
    """Change the image only while its status is one of ``statuses`` (the step of a lifecycle
    that another request may have taken first); False when it is not, or gone."""
    _check_fields(values)
    result = conn.execute(
        images.update()
        .where(images.c.id == image_id, images.c.status.in_(list(statuses)))
        .values(**values)
    )
    return result.rowcount > 0


def delete(conn: Connection, image_id: str) -> bool:
    result = conn.execute(images.delete().where(images.c.id == image_id))
    return result.rowcount > 0


def _check_fields(values: Mapping[str, Any]) -> None:
    unknown = set(values) - _FIELDS
    if unknown:
        raise ValueError(f"images have no fields {sorted(unknown)}")

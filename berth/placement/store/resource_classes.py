"""Resource classes: the standard ones from os-resource-classes and custom ``CUSTOM_*`` ones.

Only custom classes are created, renamed or deleted; the standard ones are written at start-up.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from berth.common.timeutils import utcnow
from berth.placement import exceptions
from berth.placement.store import changes
from berth.placement.store.names import NamedRecord
from berth.placement.store.schema import allocations, inventories, resource_classes

CUSTOM_PREFIX = "CUSTOM_"


class ResourceClass(NamedRecord):
    """A resource class, standard or custom."""


def _select() -> sa.Select[tuple[object, ...]]:
    rc = resource_classes
    return sa.select(rc.c.id, rc.c.name, rc.c.created_at, rc.c.updated_at).order_by(rc.c.id)


def list_classes(conn: Connection) -> list[ResourceClass]:
    """Every class, standard ones first in their library order, then custom ones by age."""
    return [ResourceClass(**row._asdict()) for row in conn.execute(_select())]


def find(conn: Connection, name: str) -> ResourceClass | None:
    row = conn.execute(_select().where(resource_classes.c.name == name)).first()
    return ResourceClass(**row._asdict()) if row is not None else None


def get(conn: Connection, name: str) -> ResourceClass:
    found = find(conn, name)
    if found is None:
        raise exceptions.NotFound(f"No such resource class {name}.")
    return found


def create(conn: Connection, name: str) -> ResourceClass:
    """A new custom class; ``Conflict`` when the name is taken."""
    conflict = exceptions.Conflict(f"Conflicting resource class already exists: {name}")
    if find(conn, name) is not None:
        raise conflict
    try:
        with conn.begin_nested():
            conn.execute(resource_classes.insert().values(name=name, created_at=utcnow()))
    except IntegrityError:
        raise conflict from None
    changes.touch_names(conn)
    return get(conn, name)


def ensure(conn: Connection, name: str) -> tuple[ResourceClass, bool]:
    """The class with this name, created if missing; the flag says whether it was created."""
    existing = find(conn, name)
    if existing is not None:
        return existing, False
    try:
        return create(conn, name), True
    except exceptions.Conflict:
        # Another request created it first: the same outcome for this caller.
        return get(conn, name), False


def rename(conn: Connection, name: str, new_name: str) -> ResourceClass:
    """Give a custom class a new name that no other class has."""
    current = get(conn, name)
    if not name.startswith(CUSTOM_PREFIX):
        raise exceptions.InvalidInput(f"Cannot update standard resource class {name}")
    rc = resource_classes
    taken = exceptions.Conflict(f"Resource class already exists: {new_name}")
    if conn.execute(sa.select(rc.c.id).where(rc.c.name == new_name, rc.c.id != current.id)).first():
        raise taken
    try:
        conn.execute(
            rc.update().where(rc.c.id == current.id).values(name=new_name, updated_at=utcnow())
        )
    except IntegrityError:
        raise taken from None
    changes.touch_names(conn)
    return get(conn, new_name)


def delete(conn: Connection, name: str) -> None:
    """Delete a custom class that no inventory or allocation uses."""
    current = get(conn, name)
    refused = "Error in delete resource class"
    if not name.startswith(CUSTOM_PREFIX):
        raise exceptions.InvalidInput(f"{refused}: Cannot delete standard resource class {name}.")
    for table in (inventories, allocations):
        used = conn.execute(
            sa.select(table.c.id).where(table.c.resource_class_id == current.id).limit(1)
        ).first()
        if used is not None:
            raise exceptions.Conflict(
                f"{refused}: Cannot delete resource class {name}. Class is in use in inventory."
            )
    conn.execute(resource_classes.delete().where(resource_classes.c.id == current.id))
    changes.touch_names(conn)

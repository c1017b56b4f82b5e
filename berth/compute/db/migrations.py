"""Migrations (moves of a server) in a cell database.

A migration's status moves forward under a guard, as an instance's task state does: each change
says which statuses it expects, so two writers (a confirm and a revert, say) cannot both win.
"""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db.cell_schema import migrations

MIGRATION = "migration"
RESIZE = "resize"
LIVE_MIGRATION = "live-migration"
EVACUATION = "evacuation"

# Statuses of a move still under way (it holds two allocations, or is about to).
IN_PROGRESS = (
    "queued", "pre-migrating", "migrating", "post-migrating", "preparing", "running",
    "finished", "confirming", "reverting", "accepted",
)  # fmt: skip


# An evacuation's status once the server runs on its destination: the failed host's copy and
# the allocation the migration holds there stay until that host comes back (then "completed").
EVACUATED = "done"


def holds_source(migration: Mapping[str, Any]) -> bool:
    """Whether the migration may hold its source host's resources: while its move is under way,
    and an evacuation until its failed host comes back."""
    if migration["status"] in IN_PROGRESS:
        return True
    return migration["migration_type"] == EVACUATION and migration["status"] == EVACUATED


def create(
    conn: Connection,
    instance: Mapping[str, Any],
    migration_type: str,
    status: str,
    new_flavor: Mapping[str, Any],
    source_port_allocations: Mapping[str, Mapping[str, str]],
) -> RowMapping:
    """A migration of ``instance`` from its host, as it is now."""
    uuid = str(uuidlib.uuid4())
    conn.execute(
        migrations.insert().values(
            uuid=uuid,
            instance_uuid=instance["uuid"],
            migration_type=migration_type,
            status=status,
            source_compute=instance["host"],
            source_node=instance["node"],
            old_flavor=dict(instance["flavor"]),
            new_flavor=dict(new_flavor),
            source_port_allocations={p: dict(g) for p, g in source_port_allocations.items()},
            project_id=instance["project_id"],
            user_id=instance["user_id"],
        )
    )
    made = get(conn, uuid)
    assert made is not None
    return made


def get(conn: Connection, uuid: str) -> RowMapping | None:
    return conn.execute(sa.select(migrations).where(migrations.c.uuid == uuid)).mappings().first()


def get_by_id(conn: Connection, migration_id: int) -> RowMapping | None:
    query = sa.select(migrations).where(migrations.c.id == migration_id)
    return conn.execute(query).mappings().first()


def in_progress(conn: Connection, instance_uuid: str) -> RowMapping | None:
    """The instance's move under way, if any (newest first)."""
    query = (
        sa.select(migrations)
        .where(
            migrations.c.instance_uuid == instance_uuid,
            migrations.c.status.in_(IN_PROGRESS),
            migrations.c.hidden == sa.false(),
        )
        .order_by(migrations.c.id.desc())
    )
    return conn.execute(query).mappings().first()


def list_migrations(
    conn: Connection,
    instance_uuid: str | None = None,
    host: str | None = None,
    status: str | None = None,
    migration_type: str | None = None,
    source_compute: str | None = None,
    statuses: Collection[str] | None = None,
    changed_since: dt.datetime | None = None,
    include_hidden: bool = False,
) -> list[RowMapping]:
    """Migrations, newest first; ``host`` matches either end. The hidden copy a cross-cell move
    keeps in its other cell is left out unless asked for."""
    query = sa.select(migrations).order_by(migrations.c.created_at.desc(), migrations.c.id.desc())
    if not include_hidden:
        query = query.where(migrations.c.hidden == sa.false())
    if instance_uuid is not None:
        query = query.where(migrations.c.instance_uuid == instance_uuid)
    if host is not None:
        query = query.where(
            sa.or_(migrations.c.source_compute == host, migrations.c.dest_compute == host)
        )
    if status is not None:
        query = query.where(migrations.c.status == status)
    if statuses is not None:
        query = query.where(migrations.c.status.in_(list(statuses)))
    if migration_type is not None:
        query = query.where(migrations.c.migration_type == migration_type)
    if source_compute is not None:
        query = query.where(migrations.c.source_compute == source_compute)
    if changed_since is not None:
        changed = sa.func.coalesce(migrations.c.updated_at, migrations.c.created_at)
        query = query.where(changed >= changed_since)
    return list(conn.execute(query).mappings())


def copy_to(conn: Connection, row: Mapping[str, Any], values: Mapping[str, Any]) -> None:
    """Write ``row`` (a migration of another cell), changed by ``values``, into this cell."""
    conn.execute(migrations.delete().where(migrations.c.uuid == row["uuid"]))
    copied = {k: v for k, v in row.items() if k != "id"}
    conn.execute(migrations.insert().values(**{**copied, **values}))


def update(
    conn: Connection,
    uuid: str,
    values: Mapping[str, Any],
    expected_statuses: Collection[str] | None = None,
) -> bool:
    """Change the migration; with ``expected_statuses`` only from one of them. False when
    nothing changed (another writer moved it first)."""
    query = migrations.update().where(migrations.c.uuid == uuid)
    if expected_statuses is not None:
        query = query.where(migrations.c.status.in_(list(expected_statuses)))
    return conn.execute(query.values(**values)).rowcount > 0

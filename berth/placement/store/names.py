"""Name-to-id lookups for resource classes and traits, shared by every store module."""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.placement.store.listed import InList
from berth.placement.store.schema import resource_classes, traits


@dataclass(frozen=True, slots=True)
class NamedRecord:
    """A row of a name table (a trait or a resource class) with its timestamps."""

    id: int
    name: str
    created_at: dt.datetime
    updated_at: dt.datetime | None

    @property
    def last_modified(self) -> dt.datetime:
        return self.updated_at or self.created_at


def resource_class_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """Ids of the named resource classes that exist; absent names are simply missing."""
    return _ids(conn, resource_classes, names)


def trait_ids(conn: Connection, names: Iterable[str]) -> dict[str, int]:
    """Ids of the named traits that exist; absent names are simply missing."""
    return _ids(conn, traits, names)


@functools.cache
def _by_names(table: sa.Table) -> InList[sa.Select[tuple[str, int]]]:
    """Built once per name table: every inventory write looks its classes up."""
    return InList(table.c.name, sa.select(table.c.name, table.c.id).where, "names")


def _ids(conn: Connection, table: sa.Table, names: Iterable[str]) -> dict[str, int]:
    wanted = sorted(set(names))
    if not wanted:
        return {}
    rows = direct.execute(conn, *_by_names(table)(wanted)).rows
    return {name: id_ for name, id_ in rows}

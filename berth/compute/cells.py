"""The cells of a deployment as the compute service reaches them: each cell's database (opened
once, migrated on first use) and its bus URL, from the CellMappings in the API database.

cell0 holds the servers that never got a host; every other cell holds hosts. A cell's database
and bus are its own: rescheduling never leaves the cell.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sqlalchemy.engine import Connection, RowMapping

from berth.common.db import Database
from berth.compute.db import cells as store
from berth.compute.db import migrate
from berth.compute.db.host_changes import HostChanges

# Idle connections a compute process keeps per database. Every compute process opens the API
# database and several cells', and a cloud runs many such processes: with the usual ten each,
# a two-cell rehearsal on one machine already passed PostgreSQL's default of 100 connections.
COMPUTE_POOL_SIZE = 2


@dataclass(frozen=True)
class Cell:
    id: int
    uuid: str
    name: str
    database_url: str
    transport_url: str
    disabled: bool

    @property
    def is_cell0(self) -> bool:
        return self.uuid == store.CELL0_UUID


class CellRegistry:
    def __init__(self, api_db: Database) -> None:
        self.api_db = api_db
        self._databases: dict[str, Database] = {}
        self._lock = threading.Lock()

    def cells(self, include_cell0: bool = True) -> list[Cell]:
        with self.api_db.read() as conn:
            return [_cell(row) for row in store.list_cells(conn, include_cell0)]

    def cells_read(self, conn: Connection) -> list[Cell]:
        """:meth:`cells` (cell0 too), read in the caller's transaction of the API database."""
        return [_cell(row) for row in store.list_cells(conn)]

    def cell(self, uuid: str) -> Cell | None:
        with self.api_db.read() as conn:
            row = store.get_cell(conn, uuid)
        return _cell(row) if row is not None else None

    def cell_by_id(self, cell_id: int) -> Cell | None:
        with self.api_db.read() as conn:
            row = store.get_cell_by_id(conn, cell_id)
        return _cell(row) if row is not None else None

    def cell0(self) -> Cell:
        found = self.cell(store.CELL0_UUID)
        if found is None:
            raise LookupError("cell0 is not mapped: run `berth manage cell create --cell0` first")
        return found

    def cell_of_host(self, host: str) -> Cell | None:
        with self.api_db.read() as conn:
            cell_id = store.cell_of_host(conn, host)
        return self.cell_by_id(cell_id) if cell_id is not None else None

    def database(self, cell: Cell) -> Database:
        """The cell's database, opened (and brought to the newest schema) once per process."""
        with self._lock:
            found = self._databases.get(cell.uuid)
            if found is None:
                found = Database(
                    cell.database_url, write_hooks=[HostChanges()], pool_size=COMPUTE_POOL_SIZE
                )
                migrate.sync_cell(found)
                self._databases[cell.uuid] = found
            return found

    def dispose(self) -> None:
        with self._lock:
            for db in self._databases.values():
                db.dispose()
            self._databases.clear()


def _cell(row: RowMapping) -> Cell:
    return Cell(
        id=row["id"],
        uuid=row["uuid"],
        name=row["name"],
        database_url=row["database_url"],
        transport_url=row["transport_url"],
        disabled=row["disabled"],
    )

"""Ending stuck builds (``stuck.find``): each server goes to ERROR with a fault, and gives back
everything it holds.

The server as a BuildRequest becomes an Instance in ERROR in cell0, as a build that found no
host does. An Instance ``building`` in a cell goes to ERROR there, without a host, and frees its
virtual functions. One that was being deleted is deleted. What the server holds elsewhere is
found where it lives, not in a list that may have died with a conductor: its allocation by
consumer, its ports by ``device_id``. Ports the compute service made are deleted, with their
addresses. The user's own ports are unbound and handed back. Its server group forgets its host.

Several conductors may run this at once, and again after a crash. Each server is ended by
whoever wins one compare-and-set: deleting its BuildRequest, or moving its Instance out of the
state it was found in. The others leave it alone. Giving things back is idempotent.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.db import Database
from berth.compute import stuck
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, created_by_compute
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import (
    build_requests,
    group_placements,
    instances,
    pci_devices,
    server_groups,
)
from berth.compute.db import cells as cell_store
from berth.compute.db.errors import Duplicate

LOG = logging.getLogger(__name__)


def end_stuck_builds(
    api_db: Database,
    cells: CellRegistry,
    placement: PlacementClient,
    network: NetworkClient,
    older_than: dt.timedelta = stuck.STUCK_AFTER,
    now: dt.datetime | None = None,
    fault: str | None = None,
) -> list[str]:
    """End every build that nothing has happened to for ``older_than`` (``fault`` says why
    in each server's fault; by default, that time). Returns one line per server this call
    ended, for the log. Servers another caller ended are left out."""
    sweep = _Sweep(api_db, cells, placement, network, fault or _fault(older_than))
    lines = []
    for build in stuck.find(api_db, cells, older_than, now):
        try:
            line = sweep.end(build)
        except Exception as exc:
            # One server that cannot be ended now must not keep the others stuck.
            LOG.exception("ending the stuck build of %s failed", build.uuid)
            line = f"{build.uuid}: not ended ({exc}); the next run tries again"
        if line is not None:
            LOG.info("stuck build %s", line)
            lines.append(line)
    return lines


def _fault(older_than: dt.timedelta) -> str:
    minutes = int(older_than.total_seconds() // 60)
    return (
        f"Build failed: nothing happened to it for {minutes} minutes, so it was ended and "
        "everything it held was given back."
    )


@dataclass(frozen=True)
class _Sweep:
    api_db: Database
    cells: CellRegistry
    placement: PlacementClient
    network: NetworkClient
    fault: str

    def end(self, build: stuck.StuckBuild) -> str | None:
        if build.instance is None or build.cell is None:
            return self._end_request(build.uuid, build.request)
        if build.instance["task_state"] == "deleting":
            return self._finish_delete(build.uuid, build.cell, build.instance)
        return self._end_instance(build.uuid, build.cell, build.instance)

    def _end_request(self, uuid: str, request: RowMapping | None) -> str | None:
        """The server is only its BuildRequest: it goes to cell0 in ERROR. The cell0 row is made
        first, so that a crash before the BuildRequest is deleted leaves the BuildRequest for
        the next run, which finds the row made already."""
        assert request is not None
        cell0 = self.cells.cell0()
        with self.cells.database(cell0).write() as conn:
            try:
                instances.create(conn, _error_row(request))
                instances.add_fault(conn, uuid, 500, self.fault, details=self.fault)
            except Duplicate:
                pass  # an earlier run, or the conductor's own burial, made it
        if not self.api_db.write_with_retry(lambda conn: _take(conn, uuid, cell0.id)):
            self._forget_spare(uuid, cell0)
            return None
        return f"{uuid}: its BuildRequest is in ERROR in cell0; gave back {self._give_back(uuid)}"

    def _forget_spare(self, uuid: str, cell0: Cell) -> None:
        """Another writer took the BuildRequest first. If it did not put the server in cell0
        (the conductor built it elsewhere, or the user deleted it), the cell0 row is spare."""
        with self.api_db.read() as conn:
            mapping = cell_store.get_instance_mapping(conn, uuid)
        if mapping is None or mapping["cell_uuid"] != cell0.uuid:
            with self.cells.database(cell0).write() as conn:
                instances.mark_deleted(conn, uuid)

    def _end_instance(self, uuid: str, cell: Cell, row: RowMapping) -> str | None:
        """ERROR, without a host, but only if it is still in the state it was found in: a
        host that finished the build meanwhile keeps its server."""
        with self.cells.database(cell).write() as conn:
            if not instances.update(
                conn,
                uuid,
                # Its ports are given back below: a later delete must not touch them again
                # (a user's port may belong to another server by then).
                {
                    "vm_state": "error",
                    "task_state": None,
                    "host": None,
                    "node": None,
                    "network_info": [],
                },
                expected_task_states=[row["task_state"]],
                expected_vm_states=["building"],
            ):
                return None
            instances.add_fault(conn, uuid, 500, self.fault, details=self.fault)
            freed = pci_devices.release(conn, uuid)
        self.api_db.write_with_retry(lambda conn: _settle(conn, uuid, cell.id))
        held = self._give_back(uuid, row["network_info"])
        vfs = f" and {freed} virtual functions" if freed else ""
        return f"{uuid}: in ERROR in {cell.name}; gave back {held}{vfs}"

    def _finish_delete(self, uuid: str, cell: Cell, row: RowMapping) -> str | None:
        """The user deleted it and its host never finished the delete: finish it, the API's
        part too (it is done already unless the API died half way)."""
        held = self._give_back(uuid, row["network_info"])
        with self.cells.database(cell).write() as conn:
            pci_devices.release(conn, uuid)
            if not instances.mark_deleted(conn, uuid):
                return None
        self.api_db.write_with_retry(lambda conn: _forget(conn, uuid))
        return f"{uuid}: deleted in {cell.name} (its delete had stopped); gave back {held}"

    def _give_back(self, uuid: str, network_info: Sequence[Mapping[str, Any]] = ()) -> str:
        """Release what the server holds; what that was, for the log."""
        held = stuck.holdings(self.placement, self.network, uuid)
        names = self._provider_names(held)
        self.placement.release(uuid)
        # A port made before its description said so is known as made from the server's record.
        made = {entry["port_id"] for entry in network_info if entry.get("created_by_compute")}
        for port in held.ports:
            if created_by_compute(port) or port["id"] in made:
                self.network.delete_port(port["id"])
            else:
                self.network.hand_back(port["id"])
        return held.describe(names)

    def _provider_names(self, held: stuck.Holdings) -> dict[str, str]:
        names = {}
        for uuid in held.allocations:
            provider = self.placement.provider(uuid)
            names[uuid] = provider["name"] if provider else uuid
        return names


def _take(conn: Connection, uuid: str, cell0_id: int) -> bool:
    """The compare-and-set that decides who ends a server that is only a BuildRequest."""
    if not build_requests.delete(conn, uuid):
        return False
    cell_store.set_instance_cell(conn, uuid, cell0_id)
    group_placements.release(conn, uuid)
    return True


def _settle(conn: Connection, uuid: str, cell_id: int) -> None:
    """The API database's part of ending an Instance. The BuildRequest goes too, if its
    conductor died before deleting it, and the mapping points at the Instance's cell."""
    if build_requests.delete(conn, uuid):
        cell_store.set_instance_cell(conn, uuid, cell_id)
    group_placements.release(conn, uuid)


def _forget(conn: Connection, uuid: str) -> None:
    cell_store.queue_instance_for_delete(conn, uuid)
    server_groups.remove_instance(conn, uuid)


def _error_row(request: RowMapping) -> dict[str, Any]:
    """The Instance a BuildRequest becomes in cell0: the server as requested, in ERROR."""
    instance = request["instance"]
    return {
        "uuid": request["instance_uuid"],
        "project_id": request["project_id"],
        "user_id": request["user_id"],
        "hostname": instance["name"],
        "vm_state": "error",
        "task_state": None,
        "power_state": 0,
        "flavor": instance["flavor"],
        "image_ref": instance["image"]["id"],
        "availability_zone": instance.get("availability_zone"),
        "key_name": instance.get("key_name"),
        "reservation_id": instance.get("reservation_id"),
        "metadata": instance.get("metadata") or {},
        **build_requests.user_fields(instance),
        "tags": instance.get("tags") or [],
        "network_info": [],
        "created_at": request["created_at"],
    }

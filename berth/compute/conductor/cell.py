"""The cell conductor: a build that failed on its host moves to the next alternate, in the cell.

It releases the failed host's allocation, unbinds the ports, claims the next alternate's
allocation request, binds the ports there and casts the build to that host with what is left.
When no alternate is left the server goes to ERROR with a fault that lists every host tried and
why, and gives back everything it was given: its allocation, the ports Berth made for it (with
their addresses), the user's ports unbound. Rescheduling never leaves the cell (DESIGN.md,
"Cells").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from berth.common.db import Database
from berth.compute import cleanup
from berth.compute.cells import Cell
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import evacuate, move_steps, ports, unshelve
from berth.compute.conductor.claims import bind_first
from berth.compute.db import group_placements, instances
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC

LOG = logging.getLogger(__name__)


class CellConductor:
    def __init__(
        self,
        cell: Cell,
        db: Database,
        api_db: Database,
        placement: PlacementClient,
        network: NetworkClient,
        cell_rpc: CellRPC,
    ) -> None:
        self.cell = cell
        self.db = db
        self.api_db = api_db
        self.placement = placement
        self.network = network
        self.cell_rpc = cell_rpc

    def reschedule(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """A build failed on ``failed_host``: the next alternate that takes it, or ERROR."""
        attempts = [*attempts, BuildAttempt(failed_host, reason)]
        with self.db.read() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
        if instance is None or instance["task_state"] == "deleting":
            LOG.info("server %s was deleted during its build; nothing to reschedule", instance_uuid)
            return
        made = [PortEntry.from_json(entry) for entry in instance["network_info"]]
        with self.db.write() as conn:
            # The host's failure counts against it (the build-failure weigher) for a while.
            instances.add_fault(conn, instance_uuid, 500, reason, details=reason, host=failed_host)
        self.placement.release(instance_uuid)
        for entry in made:
            self.network.unbind(entry.port_id)
        owner = {
            "uuid": instance_uuid,
            "project_id": instance["project_id"],
            "user_id": instance["user_id"],
        }
        bound: dict[str, Mapping[str, Any]] = {}
        chosen = bind_first(
            self.api_db, self.placement, self.network, owner, made, alternates, attempts,
            first_claimed=False, bound=bound,
        )  # fmt: skip
        if chosen is None:
            self._fail(instance_uuid, failed_host, failed_everywhere(attempts), made)
            return
        selection = alternates[chosen]
        network_info = ports.refreshed(self.network, made, bound)
        with self.db.write() as conn:
            instances.update(
                conn,
                instance_uuid,
                {
                    "host": selection.host,
                    "node": selection.node,
                    "network_info": [entry.to_json() for entry in network_info],
                },
            )
        LOG.info("server %s rescheduled from %s to %s", instance_uuid, failed_host, selection.host)
        self.cell_rpc.host(self.cell, selection.host).build_and_run_instance(
            instance_uuid, alternates[chosen + 1 :], attempts
        )

    def reschedule_move(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """A move failed on its destination: the next alternate, or back to the source."""
        move_steps.reschedule(
            self.cell, self.db, self.api_db, self.placement, self.network, self.cell_rpc,
            instance_uuid, migration_uuid, failed_host, reason, alternates, attempts,
        )  # fmt: skip

    def finish_revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """The destination dropped a reverted server's copy: back to the source."""
        move_steps.finish_revert(
            self.db, self.api_db, self.placement, self.network, instance_uuid, migration_uuid
        )

    def unshelve_failed(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """An unshelve's spawn failed on ``failed_host``: the next alternate (``unshelve``)."""
        services = unshelve.Services(self.api_db, self.placement, self.network, self.cell_rpc)
        unshelve.retry(
            services, self.cell, self.db, instance_uuid, failed_host, reason, alternates, attempts
        )

    def evacuate_failed(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """An evacuation's spawn failed on ``failed_host``: the next alternate (``evacuate``)."""
        services = evacuate.Services(self.api_db, self.placement, self.network, self.cell_rpc)
        evacuate.evacuate_failed(
            services, self.cell, self.db, instance_uuid, migration_uuid, failed_host, reason,
            alternates, attempts,
        )  # fmt: skip

    def _fail(
        self, instance_uuid: str, failed_host: str, message: str, made: Sequence[PortEntry]
    ) -> None:
        """ERROR, holding nothing: no allocation, no port Berth made, no address, no binding."""
        LOG.info("server %s: %s", instance_uuid, message)
        cleanup.release_server(self.placement, self.network, instance_uuid, made)
        with self.api_db.write() as conn:
            # No host after all: its group stops counting it anywhere.
            group_placements.release(conn, instance_uuid)
        with self.db.write() as conn:
            instances.update(
                conn,
                instance_uuid,
                {
                    "vm_state": "error",
                    "task_state": None,
                    "host": None,
                    "node": None,
                    "network_info": [],
                },
            )
            instances.add_fault(
                conn, instance_uuid, 500, message, details=message, host=failed_host
            )

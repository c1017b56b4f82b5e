"""The cell conductor: a build that failed on its host moves to the next alternate, in the cell.

It releases the failed host's allocation, unbinds the ports, claims the next alternate's
allocation request, binds the ports there and casts the build to that host with what is left.
When no alternate is left the server goes to ERROR with a fault that lists every host tried and
why. Rescheduling never leaves the cell (DESIGN.md, "Cells").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from berth.bus import BusClient
from berth.common.db import Database
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import ports
from berth.compute.conductor.build import bind_first, failed_everywhere
from berth.compute.db import instances

LOG = logging.getLogger(__name__)


class CellConductor:
    def __init__(
        self,
        db: Database,
        placement: PlacementClient,
        network: NetworkClient,
        bus: Callable[[], BusClient],
    ) -> None:
        self.db = db
        self.placement = placement
        self.network = network
        self.bus = bus

    def reschedule(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, str]],
    ) -> None:
        """The bus endpoint the compute host casts to when a build failed there."""
        attempts = [*attempts, {"host": failed_host, "reason": reason}]
        with self.db.read() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
        if instance is None or instance["task_state"] == "deleting":
            LOG.info("server %s was deleted during its build; nothing to reschedule", instance_uuid)
            return
        made = list(instance["network_info"])
        with self.db.write() as conn:
            # The host's failure counts against it (the build-failure weigher) for a while.
            instances.add_fault(conn, instance_uuid, 500, reason, details=reason, host=failed_host)
        self.placement.release(instance_uuid)
        for entry in made:
            self.network.unbind(entry["port_id"])
        owner = {
            "uuid": instance_uuid,
            "project_id": instance["project_id"],
            "user_id": instance["user_id"],
        }
        chosen = bind_first(
            self.placement, self.network, owner, made, alternates, attempts, first_claimed=False
        )
        if chosen is None:
            message = failed_everywhere(attempts)
            LOG.info("server %s: %s", instance_uuid, message)
            with self.db.write() as conn:
                instances.update(
                    conn,
                    instance_uuid,
                    {"vm_state": "error", "task_state": None, "host": None, "node": None},
                )
                instances.add_fault(
                    conn, instance_uuid, 500, message, details=message, host=failed_host
                )
            return
        selection = alternates[chosen]
        network_info = ports.refreshed(self.network, made)
        with self.db.write() as conn:
            instances.update(
                conn,
                instance_uuid,
                {
                    "host": selection["host"],
                    "node": selection["node"],
                    "network_info": network_info,
                },
            )
        self.bus().cast(
            f"compute.{selection['host']}",
            "build_and_run_instance",
            instance_uuid=instance_uuid,
            alternates=alternates[chosen + 1 :],
            attempts=attempts,
        )

"""A server's last scheduling failure, as the scheduler diagnosed it (Berth's own extension).

The diagnosis is kept with the server's fault (``instance_faults.diagnosis``) when no host could
take it; this reads the newest one back for the admin API and the ``berth`` command.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from berth.compute import exceptions
from berth.compute.db import cells as mappings
from berth.compute.db import instances
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.service import ComputeService


@dataclass(frozen=True)
class ScheduleFailure:
    server_id: str
    message: str
    created_at: Any
    diagnosis: Diagnosis


def last_failure(service: ComputeService, server_uuid: str) -> ScheduleFailure:
    """The server's newest fault with a diagnosis; NotFound for an unknown server, or one that
    never failed to be scheduled."""
    with service.api_db.read() as conn:
        mapping = mappings.get_instance_mapping(conn, server_uuid)
    if mapping is None:
        raise exceptions.NotFound(f"Instance {server_uuid} could not be found.")
    cell = None if mapping["cell_uuid"] is None else service.cells.cell(mapping["cell_uuid"])
    if cell is not None:
        with service.cells.database(cell).read() as conn:
            for fault in instances.faults(conn, server_uuid):
                if fault["diagnosis"]:
                    return ScheduleFailure(
                        server_uuid,
                        fault["message"],
                        fault["created_at"],
                        Diagnosis.from_json(fault["diagnosis"]),
                    )
    raise exceptions.NotFound(f"Instance {server_uuid} has no scheduling failure recorded.")

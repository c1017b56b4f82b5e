"""Events other services send about servers (``os-server-external-events``): each is checked
against its server and handed to the server's host (``external_instance_event``, a cast), which
acts on it (``berth.compute.host.events``).

Each event gets its own answer, as upstream's: 200 when handed over; 404 (``failed``) for a
server that does not exist; 422 (``failed``) for one that has no host to tell (still being
scheduled, or never placed).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from berth.bus import BusError
from berth.compute.db import build_requests, instances
from berth.compute.db import cells as mappings
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

ACCEPTED, MISSING, NO_HOST = 200, 404, 422


@dataclass(frozen=True)
class Outcome:
    """One event as it was given, with the code it is answered with."""

    event: Mapping[str, Any]
    code: int


def deliver(service: ComputeService, events: Sequence[Mapping[str, Any]]) -> list[Outcome]:
    return [_deliver(service, event) for event in events]


def _deliver(service: ComputeService, event: Mapping[str, Any]) -> Outcome:
    server_uuid = str(event["server_uuid"])
    with service.api_db.read() as conn:
        mapping = mappings.get_instance_mapping(conn, server_uuid)
        building = build_requests.get(conn, server_uuid) if mapping is not None else None
    if mapping is None or mapping["queued_for_delete"]:
        return Outcome(event, MISSING)
    cell = service.cells.cell(mapping["cell_uuid"]) if mapping["cell_uuid"] else None
    if cell is None:
        return Outcome(event, NO_HOST if building is not None else MISSING)
    with service.cells.database(cell).read() as conn:
        row = instances.get(conn, server_uuid, include_deleted=False)
    if row is None:
        return Outcome(event, MISSING)
    if not row["host"]:
        return Outcome(event, NO_HOST)
    try:
        service.cell_rpc.host(cell, row["host"]).external_instance_event(
            server_uuid, str(event["name"]), event.get("tag")
        )
    except BusError:
        # As upstream's cast: the event is accepted; a host that missed it acts on the next.
        LOG.exception("could not hand event %s of %s to its host", event["name"], server_uuid)
    return Outcome(event, ACCEPTED)

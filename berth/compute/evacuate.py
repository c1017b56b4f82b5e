"""Evacuating a server off a host that is down: the compute API's side (docs/compute.md,
"Evacuating a server").

The API refuses an evacuation the source host could still object to: the compute service of the
server's host must be down (forced down by an operator, or silent for longer than
``service_down_time``), a named destination must be another compute host known to the server's
cell. It then sets the task ``rebuilding``, records the action ``evacuate`` and casts
``evacuate_server`` to the super-conductor, which does the rest without the source host. A cast
that cannot be sent puts the task state back.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.common.timeutils import utcnow
from berth.compute import exceptions, server_tasks
from berth.compute.cells import Cell
from berth.compute.db import services
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

EVACUATE = "evacuate"
# The task an evacuation runs in, as Nova's (the server shows REBUILD).
REBUILDING = "rebuilding"
# A server may be evacuated while it runs, while it is stopped and after it failed.
EVACUABLE = ("active", "stopped", "error")
COMPUTE = "nova-compute"


def evacuate(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    host: str | None,
) -> None:
    """Rebuild the server on another host of its cell (``host`` if named), its own host being
    down."""

    def check(cell: Cell, row: RowMapping) -> None:
        source = row["host"]
        if not source:
            raise exceptions.Conflict(
                f"Cannot '{EVACUATE}' instance {server_uuid}: it is on no host."
            )
        if host is not None and host == source:
            raise exceptions.BadRequest(
                f"The target host can't be the same one: instance {server_uuid} is on {host}."
            )
        with service.cells.database(cell).read() as conn:
            computes = services.list_services(conn, binary=COMPUTE)
        if host is not None and not any(found["host"] == host for found in computes):
            raise exceptions.NotFound(f"Compute host {host} not found.")
        own = next((found for found in computes if found["host"] == source), None)
        if own is not None and services.is_up(own, utcnow(), service.settings.service_down_time):
            # A 400, as Nova answers it (the server's state is not the problem).
            raise exceptions.BadRequest(f"Compute service of {source} is still in use.")

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=EVACUATE, task_state=REBUILDING, vm_states=EVACUABLE, check=check,
    )  # fmt: skip
    try:
        service.conductor.evacuate_server(started.uuid, host, context.request_id)
    except BusError:
        LOG.exception("could not cast evacuate_server for %s", started.uuid)
        server_tasks.undo(service, started, REBUILDING)
        raise exceptions.ComputeError(
            "The conductor could not be reached; the server was not evacuated."
        ) from None


def new_password() -> str:
    """An administrator password for the rebuilt server, as the API answers it before 2.14."""
    return secrets.token_urlsafe(9)

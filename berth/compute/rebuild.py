"""Rebuilding a server: the compute API's side (the host's is ``host/power``).

A rebuild gives the server a new image (and, as asked, a new name, metadata, description,
access addresses, key pair, disk config, user data, personality files and admin password for
the new guest) on the host it is on. It is allowed in ACTIVE, SHUTOFF and ERROR,
as Nova's; any other state is a 409. The API checks the image as a create does (it exists, the
caller may use it, it is active, the server's flavor holds it), writes the new values with the
task state ``rebuilding`` in one conditional update, records the ``rebuild`` action and casts
``rebuild_instance`` to the host. Nothing moves: the allocation in Placement, the ports and
their bindings stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import actions, exceptions, guest_input, power, quotas, server_tasks, servers
from berth.compute import server_views as views
from berth.compute.action_input import Rebuild
from berth.compute.cells import Cell
from berth.compute.db import build_requests, instances
from berth.compute.service import ComputeService

TASK_STATE = "rebuilding"
REBUILDABLE = ("active", "stopped", "error")


def rebuild(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    request: Rebuild,
) -> views.Server:
    """Start the rebuild and hand it to the host; the server as the rebuild began (REBUILD,
    with its new image and values), read before the host can end it."""

    def check(cell: Cell, row: RowMapping) -> None:
        power.on_a_host(actions.REBUILD)(cell, row)
        with service.api_db.read() as conn:
            image, size = servers.requested_image(conn, context, request.image_ref)
            servers.check_fits(image, size, row["flavor"])
            if request.changes.get("key_name") is not None:
                servers.check_key_name(conn, context.user_id or "", request.changes["key_name"])
            guest_input.check_personality(
                quotas.project_limits(conn, row["project_id"]), request.personality
            )

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=actions.REBUILD, task_state=TASK_STATE, vm_states=REBUILDABLE, check=check,
        values={
            "image_ref": request.image_ref,
            **build_requests.as_columns(request.changes),
            "injected": servers.injected(request.admin_pass, request.personality),
        },
    )  # fmt: skip
    rebuilding = servers.get_server(service, context, server_uuid, may_see)
    try:
        service.cell_rpc.host(started.cell, started.instance["host"]).rebuild_instance(server_uuid)
    except BusError:
        _put_back(service, started)
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached; it was not rebuilt."
        ) from None
    return rebuilding


def _put_back(service: ComputeService, started: server_tasks.Started) -> None:
    """The cast failed: the server as it was before the rebuild was asked."""
    before = started.instance
    kept = ("image_ref", "display_name", "metadata", "description", "access_ip_v4",
            "access_ip_v6", "key_name", "auto_disk_config", "user_data", "injected",
            "task_state")  # fmt: skip
    with service.cells.database(started.cell).write() as conn:
        instances.update(conn, started.uuid, {k: before[k] for k in kept}, [TASK_STATE])

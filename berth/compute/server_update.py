"""Updating a server (``PUT /servers/{id}``): its name, description and access addresses.

What the user says of the server, in whichever state it is found: still a BuildRequest (the
change goes into it, and the super-conductor carries it to the Instance it makes, even one it
read the BuildRequest for earlier: see ``conductor/build``), or an Instance in its cell. A locked
server may be updated too, as Nova's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from berth.common.context import RequestContext
from berth.compute import exceptions, servers
from berth.compute import server_views as views
from berth.compute.db import build_requests, instances
from berth.compute.db import cells as mappings
from berth.compute.service import ComputeService


def update_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    changes: Mapping[str, Any],
) -> views.Server:
    """Apply ``changes`` (a BuildRequest instance's keys: name, description, access_ip_v4,
    access_ip_v6) and answer the server as it is now."""
    if changes:
        _apply(service, server_uuid, may_see, changes)
    return servers.get_server(service, context, server_uuid, may_see)


def _apply(
    service: ComputeService,
    server_uuid: str,
    may_see: Callable[[str], bool],
    changes: Mapping[str, Any],
) -> None:
    for _ in range(2):
        with service.api_db.write() as conn:
            mapping = mappings.get_instance_mapping(conn, server_uuid)
            if mapping is None or not may_see(mapping["project_id"]):
                raise _not_found(server_uuid)
            if mapping["cell_uuid"] is None:
                if build_requests.update_instance(conn, server_uuid, changes):
                    return
                if mapping["queued_for_delete"]:
                    raise _not_found(server_uuid)
                continue  # the super-conductor just gave it a cell: look again
        cell = service.cells.cell(mapping["cell_uuid"])
        if cell is None:
            raise exceptions.ComputeError(f"Cell {mapping['cell_uuid']} is not mapped.")
        with service.cells.database(cell).write() as conn:
            if not instances.update(conn, server_uuid, build_requests.as_columns(changes)):
                raise _not_found(server_uuid)
        return
    raise _not_found(server_uuid)


def _not_found(server_uuid: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Instance {server_uuid} could not be found.")

"""Server diagnostics (``os-server-diagnostics``): ask the server's host what it sees of the
guest (``get_diagnostics``, a call). Admins only, as upstream; a server without a host, or whose
host has no such guest, is a 409 (upstream's "not ready"); a host that does not answer a 503."""

from __future__ import annotations

from collections.abc import Callable

from berth.common.context import RequestContext
from berth.compute import exceptions, server_tasks
from berth.compute.objects.guest import GuestView
from berth.compute.rpc import ServiceUnreachable
from berth.compute.service import ComputeService

_ACTION = "diagnostics"


def guest_of(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> GuestView:
    cell, row = server_tasks.find(service, context, server_uuid, may_see, _ACTION)
    if not row["host"]:
        raise _not_ready(server_uuid)
    try:
        guest = service.cell_rpc.host(cell, row["host"]).get_diagnostics(server_uuid)
    except ServiceUnreachable as exc:
        raise exceptions.ServiceUnavailable(str(exc)) from None
    if guest is None:
        raise _not_ready(server_uuid)
    return guest


def _not_ready(server_uuid: str) -> exceptions.Conflict:
    return exceptions.Conflict(f"Instance {server_uuid} is not ready: its host runs no guest.")

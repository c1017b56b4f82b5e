"""A server's interfaces as the Compute API changes them (Nova's os-interface).

A server's interfaces are the ports whose ``device_id`` is the server, as the network service
lists them. Attaching and detaching are tasks on the server (``server_tasks``): the API sets the
task state and begins the instance action, then *calls* the server's host, which does the work
(``berth.compute.host.interfaces``: it owns the server's virtual functions) and answers when it
is done, and the API puts the task state back whatever the answer. On success the API keeps the
server's RequestSpec in step (its ports and their resource requests), so that a later move asks
for the attached port's resources too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import exceptions, server_tasks, servers
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.db import request_specs
from berth.compute.objects.build import PortEntry
from berth.compute.objects.request_spec import PortRequest, RequestSpec
from berth.compute.rpc import InterfaceRefused, ServiceUnreachable
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

ATTACH = "attach_interface"
DETACH = "detach_interface"
ATTACHING = "interface_attaching"
DETACHING = "interface_detaching"
# The states in which Nova changes a server's interfaces (ACTIVE, PAUSED, SHUTOFF), no task.
VM_STATES = ("active", "paused", "stopped")

_REFUSALS: dict[int, type[exceptions.ComputeError]] = {
    400: exceptions.BadRequest,
    404: exceptions.NotFound,
    409: exceptions.Conflict,
}


@dataclass(frozen=True)
class Wanted:
    """What to attach: the user's port, or a new port on a network (at an address)."""

    port_id: str | None = None
    network_id: str | None = None
    fixed_ip: str | None = None


def list_ports(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """The server's ports (NotFound when the caller may not see the server)."""
    servers.get_server(service, context, server_uuid, may_see)
    return _network(service).ports(device_id=server_uuid)


def show_port(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    port_id: str,
    may_see: Callable[[str], bool],
) -> dict[str, Any]:
    """One port of the server; NotFound when it is unknown or not the server's."""
    servers.get_server(service, context, server_uuid, may_see)
    try:
        port = _network(service).port(port_id)
    except NetworkError as exc:
        if exc.status == 404:
            raise exceptions.NotFound(f"Port {port_id} could not be found.") from None
        raise
    if port["device_id"] != server_uuid:
        raise exceptions.NotFound(f"Instance {server_uuid} has no interface with port {port_id}.")
    return port


def attach(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    wanted: Wanted,
    may_see: Callable[[str], bool],
) -> dict[str, Any]:
    """Attach on the server's host; the port as the network service then shows it."""
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=ATTACH, task_state=ATTACHING, vm_states=VM_STATES,
    )  # fmt: skip
    try:
        entry = _on_host(
            service,
            started,
            lambda host: host.attach_interface(
                server_uuid, wanted.port_id, wanted.network_id, wanted.fixed_ip
            ),
        )
    finally:
        server_tasks.undo(service, started, ATTACHING)
    port = _network(service).port(entry.port_id)
    _keep_spec(service, server_uuid, lambda ports: [*ports, _request(port)])
    return port


def detach(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    port_id: str,
    may_see: Callable[[str], bool],
) -> None:
    """Detach on the server's host; NotFound when the port is not one of the server's."""

    def check(_cell: Any, row: Any) -> None:
        if not any(PortEntry.from_json(e).port_id == port_id for e in row["network_info"]):
            raise exceptions.NotFound(f"Port {port_id} is not attached to instance {server_uuid}.")

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=DETACH, task_state=DETACHING, vm_states=VM_STATES, check=check,
    )  # fmt: skip
    try:
        _on_host(service, started, lambda host: host.detach_interface(server_uuid, port_id))
    finally:
        server_tasks.undo(service, started, DETACHING)
    _keep_spec(service, server_uuid, lambda ports: [p for p in ports if p.port_id != port_id])


def _on_host(
    service: ComputeService, started: server_tasks.Started, work: Callable[[Any], Any]
) -> Any:
    """``work`` done by the server's host; its refusals and silences as the API's errors."""
    host = started.instance["host"]
    try:
        return work(service.cell_rpc.host(started.cell, host))
    except InterfaceRefused as exc:
        raise _REFUSALS.get(exc.status, exceptions.BadRequest)(exc.message) from None
    except ServiceUnreachable as exc:
        raise exceptions.ServiceUnavailable(str(exc)) from None
    except BusError as exc:
        LOG.error("interface change of %s failed on %s: %s", started.uuid, host, exc)
        raise exceptions.ComputeError(
            f"The interface change failed on the server's host: {exc}"
        ) from None


def _request(port: dict[str, Any]) -> PortRequest:
    return PortRequest(
        port_id=port["id"],
        resource_request=port.get("resource_request") or {},
        vnic_type=port.get("binding:vnic_type", "normal"),
    )


def _keep_spec(
    service: ComputeService,
    server_uuid: str,
    change: Callable[[tuple[PortRequest, ...]], list[PortRequest]],
) -> None:
    """The server's RequestSpec with its ports changed (a server without one is left be)."""
    with service.api_db.write() as conn:
        document = request_specs.get(conn, server_uuid)
        if document is None:
            return
        spec = RequestSpec.from_json(document)
        spec = dataclasses.replace(spec, ports=tuple(change(spec.ports)))
        request_specs.save(conn, server_uuid, spec.to_json())


def _network(service: ComputeService) -> NetworkClient:
    if service.network is None:
        raise exceptions.ServiceUnavailable("The compute API has no network service to ask.")
    return service.network

"""/os-hypervisors (admins only): the compute nodes of every cell, as their host agents last
reported them, with their service's state.

Microversions: 2.28 shows ``cpu_info`` as an object (a JSON string before); 2.33 pages lists with
``limit`` and ``marker``; 2.53 names hypervisors and their services by uuid, and takes
``hypervisor_hostname_pattern`` (a substring of the name, not paged) and ``with_servers``, in
place of ``/os-hypervisors/{pattern}/search`` and ``/os-hypervisors/{pattern}/servers``, which
are 404s from 2.53.
``/os-hypervisors/statistics`` and ``/os-hypervisors/{id}/uptime`` answer at every version
(the reference drops them at 2.88).
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.compute import exceptions, hosts
from berth.compute.api import paging
from berth.compute.api.request import ComputeRequest
from berth.compute.db import instances
from berth.compute.db import services as service_store

CPU_INFO_OBJECT = (2, 28)  # cpu_info is an object
HYPERVISOR_PAGING = (2, 33)  # limit and marker
HYPERVISOR_UUIDS = (2, 53)  # uuids; hypervisor_hostname_pattern and with_servers

# The simulated hypervisor's version, as the reference's fake driver reports it.
HYPERVISOR_VERSION = 1000
_TRUE = frozenset({"true", "1", "yes", "on", "t", "y"})
_SUMMED = (
    "vcpus", "vcpus_used", "memory_mb", "memory_mb_used", "free_ram_mb", "local_gb",
    "local_gb_used", "free_disk_gb", "disk_available_least", "running_vms", "current_workload",
)  # fmt: skip


def index(req: ComputeRequest) -> Response:
    """``{"hypervisors": [{"id", "hypervisor_hostname", "state", "status"}]}``"""
    return _listing(req, detail=False)


def detail(req: ComputeRequest) -> Response:
    return _listing(req, detail=True)


def show(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-hypervisors:show")
    found = _find(req, req.param("hypervisor_id"))
    view = _transform_detail(req, found, utcnow())
    if _with_servers(req):
        _add_servers(req, found, view)
    return req.respond({"hypervisor": view})


def search(req: ComputeRequest) -> Response:
    """Before 2.53: the brief views of the hypervisors whose name holds the pattern;
    ``{"hypervisors": [{"id", "hypervisor_hostname", "state", "status"}]}``, 404 for none."""
    req.authorize("os_compute_api:os-hypervisors:search")
    nodes = _matching(hosts.all_nodes(req.service.cells), _url_pattern(req))
    now = utcnow()
    return req.respond({"hypervisors": [_transform_brief(req, node, now) for node in nodes]})


def servers(req: ComputeRequest) -> Response:
    """Before 2.53: :func:`search`'s hypervisors, each with its ``servers`` when it has any."""
    req.authorize("os_compute_api:os-hypervisors:servers")
    nodes = _matching(hosts.all_nodes(req.service.cells), _url_pattern(req))
    now = utcnow()
    views = []
    for node in nodes:
        view = _transform_brief(req, node, now)
        _add_servers(req, node, view)
        views.append(view)
    return req.respond({"hypervisors": views})


def statistics(req: ComputeRequest) -> Response:
    """The sums over every compute node: ``{"hypervisor_statistics": {"count": 2, "vcpus": 32,
    ...}}`` (the reference drops it at 2.88)."""
    req.authorize("os_compute_api:os-hypervisors:statistics")
    now = utcnow()
    views = [_transform_detail(req, node, now) for node in hosts.all_nodes(req.service.cells)]
    totals = {key: sum(view[key] for view in views) for key in _SUMMED}
    return req.respond({"hypervisor_statistics": {"count": len(views), **totals}})


def uptime(req: ComputeRequest) -> Response:
    """The brief view with ``uptime`` in the form of the ``uptime`` command, which clients
    parse: `` 09:45:02 up 3 days, 4:05, 0 users,  load average: 0.00, 0.00, 0.00``; a
    simulated host has been up since its service registered."""
    req.authorize("os_compute_api:os-hypervisors:uptime")
    found = _find(req, req.param("hypervisor_id"))
    now = utcnow()
    since = found.service["created_at"] or now
    minutes = int((now - since).total_seconds()) // 60
    days, minutes = divmod(minutes, 24 * 60)
    clock = f"{minutes // 60}:{minutes % 60:02d}"
    up = f"{days} days, {clock}" if days else clock
    view = _transform_brief(req, found, now)
    view["uptime"] = f" {now:%H:%M:%S} up {up}, 0 users,  load average: 0.00, 0.00, 0.00"
    return req.respond({"hypervisor": view})


def _find(req: ComputeRequest, wanted: str) -> hosts.CellNode:
    if req.at_least(HYPERVISOR_UUIDS):
        try:
            uuid.UUID(wanted)
        except ValueError:
            raise exceptions.BadRequest(f"Invalid uuid {wanted}") from None
    found = next((n for n in hosts.all_nodes(req.service.cells) if _id(req, n) == wanted), None)
    if found is None:
        raise exceptions.NotFound(f"Hypervisor with ID {wanted} could not be found.")
    return found


def _listing(req: ComputeRequest, *, detail: bool) -> Response:
    req.authorize("os_compute_api:os-hypervisors:" + ("list-detail" if detail else "list"))
    params = dict(req.query_items)
    nodes = hosts.all_nodes(req.service.cells)
    pattern = params.get("hypervisor_hostname_pattern") if req.at_least(HYPERVISOR_UUIDS) else None
    if pattern is not None:
        if "limit" in params or "marker" in params:
            raise exceptions.BadRequest(
                "Paging over hypervisors with the hypervisor_hostname_pattern query parameter "
                "is not supported."
            )
        nodes = _matching(nodes, pattern)
    page = paging.parse(req) if req.at_least(HYPERVISOR_PAGING) else None
    if page is not None:
        nodes = paging.after_marker(nodes, page, key=lambda node: _id(req, node))
    now = utcnow()
    views = []
    for node in nodes:
        view = _transform_detail(req, node, now) if detail else _transform_brief(req, node, now)
        if _with_servers(req):
            _add_servers(req, node, view)
        views.append(view)
    body: dict[str, Any] = {"hypervisors": views}
    if page is not None and nodes:
        body.update(paging.links(req, "hypervisors", nodes, page, _id(req, nodes[-1])))
    return req.respond(body)


def _url_pattern(req: ComputeRequest) -> str:
    """The pattern in the URL of the routes that 2.53 replaced (a 404 from then)."""
    if req.at_least(HYPERVISOR_UUIDS):
        raise exceptions.NotFound("The resource could not be found.")
    return req.param("hypervisor_hostname_pattern")


def _matching(nodes: list[hosts.CellNode], pattern: str) -> list[hosts.CellNode]:
    """The nodes whose hypervisor hostname holds ``pattern``; 404 when none does."""
    found = [node for node in nodes if pattern in node.row["hypervisor_hostname"]]
    if not found:
        raise exceptions.NotFound(f"No hypervisor matching {pattern!r} could be found.")
    return found


def _with_servers(req: ComputeRequest) -> bool:
    asked = [value for name, value in req.query_items if name == "with_servers"]
    return req.at_least(HYPERVISOR_UUIDS) and bool(asked) and asked[-1].lower() in _TRUE


def _add_servers(req: ComputeRequest, node: hosts.CellNode, view: dict[str, Any]) -> None:
    """``"servers": [{"name": ..., "uuid": ...}]`` when the node has any."""
    with req.service.cells.database(node.cell).read() as conn:
        found = instances.list_instances(conn, host=node.row["host"])
    servers = [
        {"name": i["display_name"], "uuid": i["uuid"]}
        for i in found
        if i["node"] in (None, node.row["hypervisor_hostname"])
    ]
    if servers:
        view["servers"] = servers


def _id(req: ComputeRequest, node: hosts.CellNode) -> str:
    return str(node.row["uuid"] if req.at_least(HYPERVISOR_UUIDS) else node.row["id"])


def _transform_brief(req: ComputeRequest, node: hosts.CellNode, now: dt.datetime) -> dict[str, Any]:
    """``{"id": uuid (2.53) or int, "hypervisor_hostname": "h1", "state": "up",
    "status": "enabled"}``"""
    service = node.service
    return {
        "id": node.row["uuid"] if req.at_least(HYPERVISOR_UUIDS) else node.row["id"],
        "hypervisor_hostname": node.row["hypervisor_hostname"],
        "state": "up"
        if service_store.is_up(service, now, req.service.settings.service_down_time)
        else "down",
        "status": "disabled" if service["disabled"] else "enabled",
    }


def _transform_detail(
    req: ComputeRequest, node: hosts.CellNode, now: dt.datetime
) -> dict[str, Any]:
    """The brief view with the node's capacity and usage and its ``service``
    (``{"host", "id", "disabled_reason"}``)."""
    row, service = node.row, node.service
    uuids = req.at_least(HYPERVISOR_UUIDS)
    free_disk = row["local_gb"] - row["local_gb_used"]
    return {
        **_transform_brief(req, node, now),
        "hypervisor_type": row["hypervisor_type"],
        "hypervisor_version": HYPERVISOR_VERSION,
        "host_ip": None,
        "cpu_info": {} if req.at_least(CPU_INFO_OBJECT) else "{}",
        "vcpus": row["vcpus"],
        "vcpus_used": row["vcpus_used"],
        "memory_mb": row["memory_mb"],
        "memory_mb_used": row["memory_mb_used"],
        "free_ram_mb": row["memory_mb"] - row["memory_mb_used"],
        "local_gb": row["local_gb"],
        "local_gb_used": row["local_gb_used"],
        "free_disk_gb": free_disk,
        "disk_available_least": free_disk,
        "running_vms": row["running_vms"],
        "current_workload": 0,
        "service": {
            "host": service["host"],
            "id": service["uuid"] if uuids else service["id"],
            "disabled_reason": service["disabled_reason"],
        },
    }

"""/os-simple-tenant-usage: every project's usage over a period (admin), and one project's.

The period is ``start`` to ``end`` (ISO 8601 times, UTC when they name no zone; now when
absent). The list shows each server only with ``detailed`` true; a project's usage always does,
and is ``{}`` when it had no server up in the period. From 2.40 both page by server: ``limit``
and ``marker`` (a server's uuid), with a ``next`` link when a page is full.

The domain is :mod:`berth.compute.tenant_usage`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy.engine import RowMapping
from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.compute import exceptions
from berth.compute import tenant_usage as usage
from berth.compute.api import paging
from berth.compute.api.paging import Page
from berth.compute.api.request import ComputeRequest

PAGED = (2, 40)
# Upstream reads only "1" as true; openstacksdk sends "True" (for `openstack usage list`).
_TRUE = frozenset({"1", "true", "t", "yes", "y", "on"})


def index(req: ComputeRequest) -> Response:
    """``{"tenant_usages": [{"tenant_id", "start", "stop", "total_hours", ...}, ...]}``"""
    if req.path.endswith("/"):
        # The router takes a trailing slash away; here it names a project, with an empty id
        # (Nova's routes find no such project: 404).
        raise exceptions.NotFound("No project id: /os-simple-tenant-usage/{tenant_id} needs one.")
    req.authorize("os_compute_api:os-simple-tenant-usage:list")
    period = _period(req)
    detailed = (_query(req, "detailed") or "").lower() in _TRUE
    rows, page = _page(req, usage.servers_up(req.service.cells, period))
    found = usage.by_tenant(rows, period, utcnow())
    body: dict[str, Any] = {
        "tenant_usages": [_transform(tenant, period, detailed) for tenant in found.values()]
    }
    body.update(_links(req, "tenant_usages", rows, page))
    return req.respond(body)


def show(req: ComputeRequest) -> Response:
    """``{"tenant_usage": {"tenant_id", "start", "stop", "total_hours", ..., "server_usages"}}``"""
    project_id = req.param("tenant_id")
    req.authorize("os_compute_api:os-simple-tenant-usage:show", {"project_id": project_id})
    period = _period(req)
    rows, page = _page(req, usage.servers_up(req.service.cells, period, project_id))
    found = usage.by_tenant(rows, period, utcnow()).get(project_id)
    body: dict[str, Any] = {
        "tenant_usage": _transform(found, period, detailed=True) if found else {}
    }
    body.update(_links(req, "tenant_usage", rows, page))
    return req.respond(body)


def _page(req: ComputeRequest, rows: list[RowMapping]) -> tuple[list[RowMapping], Page | None]:
    """The servers of this page and the page asked for (none before 2.40: every server)."""
    if not req.at_least(PAGED):
        return rows, None
    page = paging.parse(req)
    return paging.after_marker(rows, page, key=lambda row: str(row["uuid"])), page


def _links(
    req: ComputeRequest, key: str, shown: list[RowMapping], page: Page | None
) -> dict[str, list[dict[str, str]]]:
    if page is None:
        return {}
    return paging.links(req, key, shown, page, shown[-1]["uuid"] if shown else None)


def _transform(tenant: usage.TenantUsage, period: usage.Period, detailed: bool) -> dict[str, Any]:
    view: dict[str, Any] = {
        "tenant_id": tenant.tenant_id,
        "start": period.start.isoformat(),
        "stop": period.stop.isoformat(),
        "total_hours": tenant.total_hours,
        "total_vcpus_usage": tenant.total_vcpus_usage,
        "total_memory_mb_usage": tenant.total_memory_mb_usage,
        "total_local_gb_usage": tenant.total_local_gb_usage,
    }
    if detailed:
        view["server_usages"] = [_transform_server(server) for server in tenant.servers]
    return view


def _transform_server(server: usage.ServerUsage) -> dict[str, Any]:
    """``{"instance_id", "name", "tenant_id", "flavor", "vcpus", "memory_mb", "local_gb",
    "hours", "started_at", "ended_at", "state", "uptime"}``"""
    return {
        "instance_id": server.instance_id,
        "name": server.name,
        "tenant_id": server.tenant_id,
        "flavor": server.flavor,
        "vcpus": server.vcpus,
        "memory_mb": server.memory_mb,
        "local_gb": server.local_gb,
        "hours": server.hours,
        "started_at": server.started_at.isoformat(),
        "ended_at": server.ended_at.isoformat() if server.ended_at else None,
        "state": server.state,
        "uptime": server.uptime,
    }


def _period(req: ComputeRequest) -> usage.Period:
    now = utcnow()
    start, stop = _time(req, "start", now), _time(req, "end", now)
    if start > stop:
        raise exceptions.BadRequest(
            "Invalid start time. The start time cannot occur after the end time."
        )
    return usage.Period(start, stop)


def _time(req: ComputeRequest, name: str, default: dt.datetime) -> dt.datetime:
    value = _query(req, name)
    if value is None:
        return default
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise exceptions.BadRequest(
            f"Invalid {name} time {value!r}: an ISO 8601 time is expected (2026-11-26T10:00:00)."
        ) from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _query(req: ComputeRequest, name: str) -> str | None:
    found = [value for key, value in req.query_items if key == name]
    return found[-1] if found else None

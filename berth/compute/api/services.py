"""/os-services (admins only): the compute services of every cell, and an operator's switches.

A service is ``up`` while it reported within the last 60 seconds and is not forced down. A
compute service is in the zone of its host's aggregates (the default zone without one); the
other services (conductors, schedulers) are in the ``internal`` zone.

Disabling a service puts the trait COMPUTE_STATUS_DISABLED on its compute nodes' providers in
Placement, so that candidates leave them out; enabling it takes the trait off. Both happen in the
same request, before the cell database commits (a Placement failure is a 503 and changes
nothing).

Microversions: 2.11 shows ``forced_down`` and adds the ``force-down`` action; 2.53 names a
service by its uuid (``id``) and takes ``PUT /os-services/{uuid}`` with ``status``,
``disabled_reason`` and ``forced_down``, where earlier versions take
``PUT /os-services/{enable,disable,disable-log-reason,force-down}`` with ``host`` and ``binary``.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.compute import exceptions, hosts
from berth.compute.api.request import ComputeRequest
from berth.compute.db import aggregates
from berth.compute.db import services as store

SERVICE_FORCED_DOWN = (2, 11)  # forced_down in the view, the force-down action
SERVICE_UUIDS = (2, 53)  # ids are uuids; PUT /os-services/{uuid}


def index(req: ComputeRequest) -> Response:
    """``{"services": [view, ...]}``, narrowed by ``host`` and ``binary``."""
    req.authorize("os_compute_api:os-services:list")
    params = dict(req.query_items)
    found = hosts.all_services(req.service.cells, params.get("binary"), params.get("host"))
    zones = _zones(req)
    now = utcnow()
    return req.respond({"services": [_transform_service(req, s, zones, now) for s in found]})


def update(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-services:update")
    if req.at_least(SERVICE_UUIDS):
        return _update(req, req.param("service_id"))
    return _legacy_action(req, req.param("service_id"))


def _update(req: ComputeRequest, service_id: str) -> Response:
    """2.53: ``{"status": "disabled", "disabled_reason": "maintenance", "forced_down": false}``"""
    try:
        uuid.UUID(service_id)
    except ValueError:
        raise exceptions.BadRequest(f"Invalid uuid {service_id}") from None
    body = req.json_body()
    if not isinstance(body, dict):
        raise exceptions.BadRequest("Invalid input: a JSON object is required.")
    unknown = sorted(set(body) - {"status", "disabled_reason", "forced_down"})
    if unknown:
        raise exceptions.BadRequest(f"Invalid input: additional properties {unknown}.")
    status, reason = body.get("status"), body.get("disabled_reason")
    if status is not None and status not in ("enabled", "disabled"):
        raise exceptions.BadRequest("Invalid input: status is 'enabled' or 'disabled'.")
    if "disabled_reason" in body and status != "disabled":
        raise exceptions.BadRequest(
            "Specifying 'disabled_reason' requires the 'status' of 'disabled'."
        )
    if reason is not None:
        _check_reason(reason)
    if status is None and "forced_down" not in body:
        raise exceptions.BadRequest(
            "No updates were requested. Fields 'status' or 'forced_down' should be specified."
        )
    values: dict[str, Any] = {}
    if status is not None:
        values["disabled"] = status == "disabled"
        values["disabled_reason"] = reason if status == "disabled" else None
    if "forced_down" in body:
        values["forced_down"] = _boolean("forced_down", body["forced_down"])
    found = hosts.service_by_uuid(req.service.cells, service_id)
    if found is None:
        raise exceptions.NotFound(f"Service {service_id} could not be found.")
    service = _apply(req, found, values)
    return req.respond({"service": _transform_service(req, service, _zones(req), utcnow())})


def _legacy_action(req: ComputeRequest, action: str) -> Response:
    """Before 2.53: ``PUT /os-services/disable {"host": H, "binary": B}`` and its kin."""
    actions = ["enable", "disable", "disable-log-reason"]
    if req.at_least(SERVICE_FORCED_DOWN):
        actions.append("force-down")
    if action not in actions:
        raise exceptions.NotFound(f"Unknown action {action}; one of {actions}.")
    body = req.json_body()
    if not isinstance(body, dict):
        raise exceptions.BadRequest("Invalid input: a JSON object is required.")
    host, binary = body.get("host"), body.get("binary")
    if not isinstance(host, str) or not isinstance(binary, str) or not host or not binary:
        raise exceptions.BadRequest("Invalid input: 'host' and 'binary' are required.")
    values: dict[str, Any]
    if action == "enable":
        values = {"disabled": False, "disabled_reason": None}
    elif action == "disable":
        values = {"disabled": True}
    elif action == "disable-log-reason":
        if "disabled_reason" not in body:
            raise exceptions.BadRequest("Missing disabled reason field")
        values = {"disabled": True, "disabled_reason": _check_reason(body["disabled_reason"])}
    else:
        if "forced_down" not in body:
            raise exceptions.BadRequest("Missing forced_down field")
        values = {"forced_down": _boolean("forced_down", body["forced_down"])}
    found = hosts.find_service(req.service.cells, host, binary)
    if found is None:
        raise exceptions.NotFound(f"Compute host {host} with binary {binary} could not be found.")
    service = _apply(req, found, values)
    view: dict[str, Any] = {"host": host, "binary": binary}
    if action == "force-down":
        view["forced_down"] = service.row["forced_down"]
    else:
        view["status"] = "disabled" if service.row["disabled"] else "enabled"
    if action == "disable-log-reason":
        view["disabled_reason"] = service.row["disabled_reason"]
    return req.respond({"service": view})


def _apply(
    req: ComputeRequest, service: hosts.CellService, values: Mapping[str, Any]
) -> hosts.CellService:
    return hosts.update_service(req.service.cells, req.service.placement, service, values)


def _check_reason(reason: Any) -> str:
    if not isinstance(reason, str) or not 1 <= len(reason) <= 255:
        raise exceptions.BadRequest("Invalid input: disabled_reason is 1 to 255 characters.")
    return reason


def _boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise exceptions.BadRequest(f"Invalid input: {name} must be a boolean.")
    return value


def _zones(req: ComputeRequest) -> dict[str, str]:
    with req.service.api_db.read() as conn:
        return hosts.zones_of_hosts(aggregates.list_aggregates(conn))


def _transform_service(
    req: ComputeRequest, service: hosts.CellService, zones: Mapping[str, str], now: dt.datetime
) -> dict[str, Any]:
    """``{"id": uuid (2.53) or int, "binary": "nova-compute", "host": "h1", "zone": "nova",
    "status": "enabled", "state": "up", "updated_at": ..., "disabled_reason": null,
    "forced_down": false (2.11)}``"""
    row = service.row
    view: dict[str, Any] = {
        "id": row["uuid"] if req.at_least(SERVICE_UUIDS) else row["id"],
        "binary": row["binary"],
        "host": row["host"],
        "zone": hosts.zone_of(row, zones, req.service.settings.default_availability_zone),
        "status": "disabled" if row["disabled"] else "enabled",
        "state": "up" if store.is_up(row, now, req.service.settings.service_down_time) else "down",
        "updated_at": hosts.reported_at(row),
        "disabled_reason": row["disabled_reason"],
    }
    if req.at_least(SERVICE_FORCED_DOWN):
        view["forced_down"] = row["forced_down"]
    return view

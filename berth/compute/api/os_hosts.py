"""/os-hosts (admins only, removed at 2.43): the legacy view of the hosts, before os-services
and os-hypervisors took its place.

- ``GET /os-hosts[?zone=Z]``: the enabled services as hosts, ``{"host_name", "service"`` (the
  topic), ``"zone"}``; a blank zone is no filter.
- ``GET /os-hosts/{host}``: a compute host's resources (:mod:`berth.compute.host_usage`).
- ``PUT /os-hosts/{host}``: ``status`` enable/disable switches the host's compute service, as
  os-services does; ``maintenance_mode`` is a 501, as with Nova's libvirt driver (a host has
  no maintenance mode).
- ``GET /os-hosts/{host}/startup|shutdown|reboot``: a 501 for a known host: Berth's simulated
  hosts are not powered on and off, as libvirt's are not through Nova.

From 2.43 every path is a 404, as Nova's.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, host_usage, hosts
from berth.compute.api.request import ComputeRequest
from berth.compute.db import aggregates

REMOVED = (2, 43)
_SWITCHES = ("enable", "disable")


def index(req: ComputeRequest) -> Response:
    """``{"hosts": [{"host_name": "h1", "service": "compute", "zone": "nova"}]}``"""
    _check_served(req)
    req.authorize("os_compute_api:os-hosts:list")
    zone = dict(req.query_items).get("zone")
    with req.service.api_db.read() as conn:
        zones = hosts.zones_of_hosts(aggregates.list_aggregates(conn))
    default = req.service.settings.default_availability_zone
    listed = [
        {
            "host_name": found.row["host"],
            "service": found.row["topic"],
            "zone": hosts.zone_of(found.row, zones, default),
        }
        for found in hosts.all_services(req.service.cells)
        if not found.row["disabled"]
    ]
    if zone:
        listed = [host for host in listed if host["zone"] == zone]
    return req.respond({"hosts": listed})


def show(req: ComputeRequest) -> Response:
    """``{"host": [{"resource": {"host": "h1", "project": "(total)", "cpu": 8,
    "memory_mb": 16384, "disk_gb": 100}}, ...]}``"""
    _check_served(req)
    req.authorize("os_compute_api:os-hosts:show")
    host = req.param("host_name")
    lines = host_usage.of_host(req.service.cells, host)
    if lines is None:
        raise _not_found(host)
    return req.respond(
        {
            "host": [
                {
                    "resource": {
                        "host": host,
                        "project": line.project,
                        "cpu": line.cpu,
                        "memory_mb": line.memory_mb,
                        "disk_gb": line.disk_gb,
                    }
                }
                for line in lines
            ]
        }
    )


def update(req: ComputeRequest) -> Response:
    """``{"status": "disable"}`` answers ``{"host": "h1", "status": "disabled"}``."""
    _check_served(req)
    req.authorize("os_compute_api:os-hosts:update")
    status, maintenance = _parse_update(req.json_body())
    service = _compute_service(req, req.param("host_name"))
    if maintenance is not None:
        raise exceptions.Unimplemented(
            "Berth's hosts have no maintenance mode; disable the host's service instead."
        )
    if status is None:  # _parse_update asked for one of the two
        raise exceptions.BadRequest("Invalid input: 'status' or 'maintenance_mode' is required.")
    changed = hosts.update_service(
        req.service.cells,
        req.service.placement,
        service,
        {"disabled": status == "disable", "disabled_reason": None},
    )
    state = "disabled" if changed.row["disabled"] else "enabled"
    return req.respond({"host": changed.row["host"], "status": state})


def startup(req: ComputeRequest) -> Response:
    return _power_action(req, "start", "startup")


def shutdown(req: ComputeRequest) -> Response:
    return _power_action(req, "shutdown", "shutdown")


def reboot(req: ComputeRequest) -> Response:
    return _power_action(req, "reboot", "reboot")


def _power_action(req: ComputeRequest, rule: str, action: str) -> Response:
    _check_served(req)
    req.authorize(f"os_compute_api:os-hosts:{rule}")
    _compute_service(req, req.param("host_name"))
    raise exceptions.Unimplemented(f"Berth's hosts cannot {action}: they are simulated.")


def _parse_update(body: Any) -> tuple[str | None, str | None]:
    """``status`` and ``maintenance_mode``, each "enable" or "disable" (any case); one at least."""
    if not isinstance(body, dict):
        raise exceptions.BadRequest("Invalid input: a JSON object is required.")
    unknown = sorted(set(body) - {"status", "maintenance_mode"})
    if unknown:
        raise exceptions.BadRequest(f"Invalid input: additional properties {unknown}.")
    if not body:
        raise exceptions.BadRequest("Invalid input: 'status' or 'maintenance_mode' is required.")
    found: list[str | None] = []
    for field in ("status", "maintenance_mode"):
        if field not in body:
            found.append(None)
            continue
        value = body[field]
        if not isinstance(value, str) or value.lower() not in _SWITCHES:
            raise exceptions.BadRequest(
                f"Invalid input for field '{field}': {value!r} is not 'enable' or 'disable'."
            )
        found.append(value.lower())
    return found[0], found[1]


def _compute_service(req: ComputeRequest, host: str) -> hosts.CellService:
    found = hosts.find_service(req.service.cells, host, hosts.COMPUTE_BINARY)
    if found is None:
        raise _not_found(host)
    return found


def _not_found(host: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Compute host {host} could not be found.")


def _check_served(req: ComputeRequest) -> None:
    if req.at_least(REMOVED):
        raise exceptions.NotFound("The resource could not be found.")

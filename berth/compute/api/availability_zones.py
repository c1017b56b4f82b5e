"""/os-availability-zone: the zones servers may be asked into, and (admins) their hosts.

The zones are those the aggregates name plus the default zone, which holds every compute host in
no zone-carrying aggregate. A zone is available unless every compute service in it is disabled.
The detailed list (admins only) gives each zone's hosts and their services, and the
``internal`` zone of the services that are not compute services::

    {"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": true},
      "hosts": {"h1": {"nova-compute": {"available": true, "active": true,
                                        "updated_at": "..."}}}}]}
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.compute import hosts
from berth.compute.api.request import ComputeRequest
from berth.compute.db import aggregates
from berth.compute.db import services as service_store


def index(req: ComputeRequest) -> Response:
    """``{"availabilityZoneInfo": [{"zoneName": "nova", "zoneState": {"available": true},
    "hosts": null}]}``"""
    req.authorize("os_compute_api:os-availability-zone:list")
    zones = _zones(req)
    return req.respond(
        {
            "availabilityZoneInfo": [
                _transform_zone(name, services, None)
                for name, services in zones.items()
                if name != hosts.INTERNAL_ZONE
            ]
        }
    )


def detail(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-availability-zone:detail")
    now = utcnow()
    info = []
    for name, services in _zones(req).items():
        by_host: dict[str, dict[str, Any]] = {}
        for service in services:
            by_host.setdefault(service["host"], {})[service["binary"]] = {
                "available": service_store.is_up(
                    service, now, req.service.settings.service_down_time
                )
                and not service["disabled"],
                "active": not service["disabled"],
                "updated_at": hosts.reported_at(service),
            }
        info.append(_transform_zone(name, services, by_host or None))
    return req.respond({"availabilityZoneInfo": info})


def _zones(req: ComputeRequest) -> dict[str, list[Any]]:
    """Zone name -> the services in it, the default zone first, then by name."""
    default = req.service.settings.default_availability_zone
    with req.service.api_db.read() as conn:
        found = aggregates.list_aggregates(conn)
    zones: dict[str, list[Any]] = {default: []}
    for name in sorted({a.availability_zone for a in found if a.availability_zone is not None}):
        zones.setdefault(name, [])
    of_hosts = hosts.zones_of_hosts(found)
    for service in hosts.all_services(req.service.cells):
        zone = hosts.zone_of(service.row, of_hosts, default)
        # A host its aggregates put in several zones is shown in each.
        for name in zone.split(","):
            zones.setdefault(name, []).append(service.row)
    return zones


def _transform_zone(
    name: str, services: list[Any], host_view: dict[str, Any] | None
) -> dict[str, Any]:
    computes = [s for s in services if hosts.is_compute(s)]
    available = not computes or any(not s["disabled"] for s in computes)
    return {"zoneName": name, "zoneState": {"available": available}, "hosts": host_view}

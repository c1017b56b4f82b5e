"""/os-aggregates (admins only): host aggregates, their hosts and metadata.

An aggregate's ``availability_zone`` is its metadata key of that name, and a host is in one zone
at most: adding it to an aggregate of another zone, or giving an aggregate a zone that one of its
hosts is out of, is a 409. Hosts must exist (a compute node in a mapped cell) to be added.

Every host change is mirrored into Placement in the same request, before the API database
commits: the aggregate's uuid becomes (or stops being) a Placement aggregate of the host's
compute node providers, which is what ``member_of`` queries for zones rely on. If Placement
fails, the request fails (503) and nothing changes in the API database.

Microversions: 2.41 shows the aggregate's ``uuid``.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.engine import Connection
from starlette.responses import Response

from berth.compute import exceptions, hosts
from berth.compute.api.request import ComputeRequest
from berth.compute.db import aggregates as store
from berth.compute.db.aggregates import AVAILABILITY_ZONE, Aggregate
from berth.compute.db.errors import Duplicate

AGGREGATE_UUID = (2, 41)  # uuid in the view

_ACTIONS = ("add_host", "remove_host", "set_metadata")


def index(req: ComputeRequest) -> Response:
    """``{"aggregates": [view, ...]}``"""
    req.authorize("os_compute_api:os-aggregates:index")
    with req.service.api_db.read() as conn:
        found = store.list_aggregates(conn)
    return req.respond({"aggregates": [_transform_aggregate(req, a) for a in found]})


def show(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-aggregates:show")
    with req.service.api_db.read() as conn:
        aggregate = _get(conn, req.param("aggregate_id"))
    return req.respond({"aggregate": _transform_aggregate(req, aggregate)})


def create(req: ComputeRequest) -> Response:
    """``{"aggregate": {"name": "rack1", "availability_zone": "az1"}}``; the answer has no
    ``hosts`` or ``metadata`` (as the reference answers)."""
    req.authorize("os_compute_api:os-aggregates:create")
    body = req.resource_body("aggregate")
    _only(body, {"name", "availability_zone"}, "aggregate")
    name = _check_name(body.get("name"), "name")
    zone = _check_zone(body.get("availability_zone"))
    with req.service.api_db.write() as conn:
        try:
            made = store.create(conn, str(uuid.uuid4()), name)
        except Duplicate:
            raise exceptions.Conflict(f"Aggregate {name} already exists.") from None
        if zone is not None:
            store.set_metadata(conn, made.id, {AVAILABILITY_ZONE: zone})
        aggregate = _get(conn, str(made.id))
    view = _transform_aggregate(req, aggregate)
    del view["hosts"], view["metadata"]
    return req.respond({"aggregate": view})


def update(req: ComputeRequest) -> Response:
    """``{"aggregate": {"name": ..., "availability_zone": ...}}``, at least one of them."""
    req.authorize("os_compute_api:os-aggregates:update")
    body = req.resource_body("aggregate")
    _only(body, {"name", "availability_zone"}, "aggregate")
    if not body:
        raise exceptions.BadRequest("Invalid input for aggregate: name or availability_zone.")
    with req.service.api_db.write() as conn:
        aggregate = _get(conn, req.param("aggregate_id"))
        if "name" in body:
            name = _check_name(body["name"], "name")
            try:
                store.rename(conn, aggregate.id, name)
            except Duplicate:
                raise exceptions.Conflict(f"Aggregate {name} already exists.") from None
        if "availability_zone" in body:
            _change_zone(conn, aggregate, _check_zone(body["availability_zone"]))
        aggregate = _get(conn, str(aggregate.id))
    return req.respond({"aggregate": _transform_aggregate(req, aggregate)})


def delete(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-aggregates:delete")
    with req.service.api_db.write() as conn:
        aggregate = _get(conn, req.param("aggregate_id"))
        if aggregate.hosts:
            raise exceptions.Conflict(
                f"Cannot delete aggregate {aggregate.id}: it still has hosts "
                f"{', '.join(aggregate.hosts)}; remove them first."
            )
        store.delete(conn, aggregate.id)
    return req.no_content(200)


def action(req: ComputeRequest) -> Response:
    """``{"add_host": {"host": H}}``, ``{"remove_host": {"host": H}}`` or
    ``{"set_metadata": {"metadata": {key: value or null}}}``; answers the aggregate."""
    body = req.json_body()
    if not isinstance(body, dict) or len(body) != 1 or next(iter(body)) not in _ACTIONS:
        raise exceptions.BadRequest(f"Invalid input: exactly one action of {list(_ACTIONS)}.")
    ((name, argument),) = body.items()
    req.authorize(f"os_compute_api:os-aggregates:{name}")
    if not isinstance(argument, dict):
        raise exceptions.BadRequest(f"Invalid input for {name}: an object is required.")
    with req.service.api_db.write() as conn:
        aggregate = _get(conn, req.param("aggregate_id"))
        if name == "set_metadata":
            _only(argument, {"metadata"}, name)
            _set_metadata(conn, aggregate, argument.get("metadata"))
        else:
            _only(argument, {"host"}, name)
            host = _check_name(argument.get("host"), "host")
            if name == "add_host":
                _add_host(req, conn, aggregate, host)
            else:
                _remove_host(req, conn, aggregate, host)
        aggregate = _get(conn, str(aggregate.id))
    return req.respond({"aggregate": _transform_aggregate(req, aggregate)})


# The actions


def _add_host(req: ComputeRequest, conn: Connection, aggregate: Aggregate, host: str) -> None:
    nodes = hosts.nodes_of_host(req.service.cells, host)
    if not nodes:
        raise exceptions.NotFound(f"Compute host {host} could not be found.")
    if host in aggregate.hosts:
        raise exceptions.Conflict(f"Aggregate {aggregate.id} already has host {host}.")
    other = hosts.zone_conflict(
        store.list_aggregates(conn), host, aggregate.availability_zone, aggregate.id
    )
    if other is not None:
        raise exceptions.Conflict(
            f"Cannot add host {host} to aggregate {aggregate.id}: it is in availability zone "
            f"{other}, not {aggregate.availability_zone}."
        )
    store.add_host(conn, aggregate.id, host)
    hosts.mirror_aggregate(req.service.placement, nodes, aggregate.uuid, member=True)


def _remove_host(req: ComputeRequest, conn: Connection, aggregate: Aggregate, host: str) -> None:
    if not store.remove_host(conn, aggregate.id, host):
        raise exceptions.NotFound(
            f"Cannot remove host {host} in aggregate {aggregate.id}: not found."
        )
    nodes = hosts.nodes_of_host(req.service.cells, host)
    hosts.mirror_aggregate(req.service.placement, nodes, aggregate.uuid, member=False)


def _set_metadata(conn: Connection, aggregate: Aggregate, metadata: Any) -> None:
    if not isinstance(metadata, dict):
        raise exceptions.BadRequest("Invalid input for set_metadata: 'metadata' is an object.")
    for key, value in metadata.items():
        _check_name(key, "metadata key")
        if value is not None and (not isinstance(value, str) or len(value) > 255):
            raise exceptions.BadRequest(
                f"Invalid input for set_metadata: the value of {key} must be a string of at "
                "most 255 characters, or null to remove it."
            )
    if AVAILABILITY_ZONE in metadata:
        _change_zone(conn, aggregate, _check_zone(metadata[AVAILABILITY_ZONE]))
    kept = {key: value for key, value in metadata.items() if key != AVAILABILITY_ZONE}
    store.set_metadata(conn, aggregate.id, {k: v for k, v in kept.items() if v is not None})
    store.unset_metadata(conn, aggregate.id, [k for k, v in kept.items() if v is None])


def _change_zone(conn: Connection, aggregate: Aggregate, zone: str | None) -> None:
    """Give the aggregate a zone (None: none), unless one of its hosts is in another."""
    others = store.list_aggregates(conn)
    for host in aggregate.hosts:
        other = hosts.zone_conflict(others, host, zone, aggregate.id)
        if other is not None:
            raise exceptions.Conflict(
                f"Cannot set availability zone {zone} on aggregate {aggregate.id}: its host "
                f"{host} is in availability zone {other}."
            )
    if zone is None:
        store.unset_metadata(conn, aggregate.id, [AVAILABILITY_ZONE])
    else:
        store.set_metadata(conn, aggregate.id, {AVAILABILITY_ZONE: zone})


# Checks and views


def _get(conn: Connection, aggregate_id: str) -> Aggregate:
    number = int(aggregate_id) if aggregate_id.isascii() and aggregate_id.isdigit() else None
    found = store.get(conn, number) if number is not None and number < 2**31 else None
    if found is None:
        raise exceptions.NotFound(f"Aggregate {aggregate_id} could not be found.")
    return found


def _check_name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 255 or value != value.strip():
        raise exceptions.BadRequest(
            f"Invalid input: {what} must be 1 to 255 characters, without leading or trailing "
            "whitespace."
        )
    return value


def _check_zone(value: Any) -> str | None:
    if value is None:
        return None
    zone = _check_name(value, "availability_zone")
    if ":" in zone:
        raise exceptions.BadRequest("Invalid input: an availability zone name has no ':'.")
    return zone


def _only(body: dict[str, Any], allowed: set[str], what: str) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise exceptions.BadRequest(
            f"Invalid input for {what}: additional properties are not allowed ({unknown})."
        )


def _transform_aggregate(req: ComputeRequest, aggregate: Aggregate) -> dict[str, Any]:
    """``{"id": 1, "name": "rack1", "availability_zone": "az1", "hosts": ["h1"],
    "metadata": {"availability_zone": "az1"}, "created_at": ..., "updated_at": ...,
    "deleted": false, "deleted_at": null, "uuid": ... (2.41)}``"""
    view: dict[str, Any] = {
        "id": aggregate.id,
        "name": aggregate.name,
        "availability_zone": aggregate.availability_zone,
        "hosts": list(aggregate.hosts),
        "metadata": dict(aggregate.metadata),
        "created_at": aggregate.created_at,
        "updated_at": aggregate.updated_at,
        "deleted": False,
        "deleted_at": None,
    }
    if req.at_least(AGGREGATE_UUID):
        view["uuid"] = aggregate.uuid
    return view

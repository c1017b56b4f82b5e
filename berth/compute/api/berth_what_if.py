"""/os-berth-what-if: where a boot request would go and how many more of it fit, without
booting (Berth's own extension of the Compute API). Its body is a server create's at the same
microversion plus ``count``, held to ``schemas.server.WHAT_IF_BY_VERSION`` before the handler
runs. The domain is :mod:`berth.compute.what_if`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, server_input, what_if
from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest
from berth.compute.objects.selection import Selection
from berth.compute.objects.what_if import HostCapacity, WhatIf
from berth.compute.service import ComputeService

SEES_HOSTS = "os_compute_api:os-berth-what-if:hosts"


def create(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-berth-what-if:create")
    if not req.context.project_id:
        raise exceptions.Forbidden("A server belongs to a project; this token has none.")
    body = req.json_body()
    request = server_input.parse_create(
        body, networks_required=req.at_least(microversion.NETWORKS_AUTO_NONE)
    )
    # As many as the request would boot unless asked; the schema bounds a count given.
    count: int = body.get("count", request.max_count)
    asked = what_if.ask(req.service, req.context, request, count)
    return req.respond({"what_if": _transform(req.service, asked, req.allowed(SEES_HOSTS))})


def _transform(service: ComputeService, asked: what_if.Asked, sees_hosts: bool) -> dict[str, Any]:
    """::

    {"fits": true, "count": 2, "message": null,
     "capacity": {"instances": 12, "exact": true, "together": false,
                  "availability_zones": {"nova": 12},
                  # with os-berth-what-if:hosts (admins) only:
                  "cells": {"cell1": 8}, "hosts": [{"host": "cn1", "instances": 4, ...}]},
     # admins only:
     "instances": [{"host": "cn1", "cell": "cell1", "allocations": {...}, "ports": [...],
                    "alternates": [{"host": "cn2", ...}]}],
     "diagnosis": null, "seed": 42}
    """
    answer = asked.answer
    capacity: dict[str, Any] = {
        "instances": _room(answer.hosts, answer.together),
        "exact": answer.complete and all(h.exact for h in answer.hosts),
        "together": answer.together,
        "availability_zones": _room_by(answer.hosts, answer.together, _zone),
    }
    shown: dict[str, Any] = {
        "fits": answer.fits,
        "count": asked.spec.num_instances,
        "message": answer.message,
        "capacity": capacity,
    }
    if not sees_hosts:
        return shown
    cells = {c.uuid: c.name for c in service.cells.cells()}
    capacity["cells"] = _room_by(answer.hosts, answer.together, lambda h: cells.get(h.cell_uuid))
    capacity["hosts"] = [{**h.to_json(), "cell": cells.get(h.cell_uuid)} for h in answer.hosts]
    names = _provider_names(service, answer)
    shown["instances"] = [
        {
            **_selection(chosen[0], cells),
            "allocations": {
                rp: {"name": names.get(rp), "resources": dict(body.get("resources") or {})}
                for rp, body in chosen[0].allocations.items()
            },
            "ports": what_if.port_providers(asked.ports, chosen[0].port_allocations),
            "alternates": [_selection(s, cells) for s in chosen[1:]],
        }
        for chosen in answer.selections
    ]
    shown["diagnosis"] = None if answer.diagnosis is None else answer.diagnosis.to_json()
    shown["seed"] = answer.seed
    return shown


def _selection(selection: Selection, cells: dict[str, str]) -> dict[str, Any]:
    return {
        "host": selection.host,
        "node": selection.node,
        "node_uuid": selection.node_uuid,
        "cell": cells.get(selection.cell_uuid),
        "weight": selection.weight,
    }


def _zone(host: HostCapacity) -> str:
    return host.availability_zone


def _room(hosts: Iterable[HostCapacity], together: bool) -> int:
    counts = [h.instances for h in hosts]
    return max(counts, default=0) if together else sum(counts)


def _room_by(
    hosts: Iterable[HostCapacity], together: bool, key: Callable[[HostCapacity], str | None]
) -> dict[str, int]:
    grouped: dict[str, list[HostCapacity]] = {}
    for host in hosts:
        grouped.setdefault(str(key(host)), []).append(host)
    return {name: _room(members, together) for name, members in sorted(grouped.items())}


def _provider_names(service: ComputeService, answer: WhatIf) -> dict[str, str]:
    """The names of the providers the chosen selections draw from (a few reads)."""
    if service.placement is None:
        return {}
    wanted = {rp for chosen in answer.selections for rp in chosen[0].allocations}
    names = {}
    for rp in sorted(wanted):
        provider = service.placement.provider(rp)
        if provider is not None:
            names[rp] = str(provider["name"])
    return names

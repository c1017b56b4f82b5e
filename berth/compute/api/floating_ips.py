"""/os-floating-ips and the ``addFloatingIp``/``removeFloatingIp`` server actions: Nova's
proxies to the network service's floating IPs, for the caller's project.

- ``GET /os-floating-ips``, ``GET /os-floating-ips/{id}``: ``{"floating_ip(s)": {"id", "ip",
  "fixed_ip", "instance_id", "pool"}}`` (rules ``os-floating-ips:list``, ``:show``, readers).
- ``POST /os-floating-ips`` ``{"pool": name or id}`` (or no body): 200 with the new one
  (``:create``, members); ``DELETE /os-floating-ips/{id}``: 202 (``:delete``).
- ``addFloatingIp`` ``{"address", "fixed_address"?}``, ``removeFloatingIp`` ``{"address"}``:
  202 (``:add``, ``:remove``, members, on the server).

As Nova's, the paths answer 404 from 2.36 and the actions from 2.44. The domain is
:mod:`berth.compute.floating_ips`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute import floating_ips as domain
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-floating-ips:"
PROXIES_REMOVED = (2, 36)
ACTIONS_REMOVED = (2, 44)


def index(req: ComputeRequest) -> Response:
    _check_served(req, PROXIES_REMOVED)
    req.authorize(f"{_RULE}list")
    return req.respond({"floating_ips": domain.list_floating_ips(req.service, req.context)})


def show(req: ComputeRequest) -> Response:
    _check_served(req, PROXIES_REMOVED)
    req.authorize(f"{_RULE}show")
    found = domain.show_floating_ip(req.service, req.context, req.param("floating_ip_id"))
    return req.respond({"floating_ip": found})


def create(req: ComputeRequest) -> Response:
    _check_served(req, PROXIES_REMOVED)
    req.authorize(f"{_RULE}create")
    # Held to its schema (an object with an optional pool, or none at all) already.
    body = req.json_body() if req.body else None
    pool = body.get("pool") if body else None
    return req.respond({"floating_ip": domain.allocate(req.service, req.context, pool)})


def delete(req: ComputeRequest) -> Response:
    _check_served(req, PROXIES_REMOVED)
    req.authorize(f"{_RULE}delete")
    domain.release(req.service, req.context, req.param("floating_ip_id"))
    return req.no_content(202)


def add(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    _check_served(req, ACTIONS_REMOVED)
    rule = f"{_RULE}add"
    req.authorize(rule)
    address, fixed = _addresses(argument, "addFloatingIp", with_fixed=True)
    domain.associate(req.service, req.context, server_id, address, fixed, _may_see(req, rule))
    return req.no_content(202)


def remove(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    _check_served(req, ACTIONS_REMOVED)
    rule = f"{_RULE}remove"
    req.authorize(rule)
    address, _ = _addresses(argument, "removeFloatingIp", with_fixed=False)
    domain.disassociate(req.service, req.context, server_id, address, _may_see(req, rule))
    return req.no_content(202)


def _addresses(argument: Any, action: str, with_fixed: bool) -> tuple[str, str | None]:
    allowed = {"address", "fixed_address"} if with_fixed else {"address"}
    if not isinstance(argument, dict) or set(argument) - allowed or "address" not in argument:
        raise exceptions.BadRequest(
            f"Invalid input for {action}: an object with 'address'"
            + (" and an optional 'fixed_address'" if with_fixed else "")
            + " is expected."
        )
    address, fixed = argument["address"], argument.get("fixed_address")
    if not isinstance(address, str) or not (fixed is None or isinstance(fixed, str)):
        raise exceptions.BadRequest(f"Invalid input for {action}: addresses are strings.")
    return address, fixed


def _may_see(req: ComputeRequest, rule: str) -> Any:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})


def _check_served(req: ComputeRequest, removed: tuple[int, int]) -> None:
    if req.at_least(removed):
        raise exceptions.NotFound("The resource could not be found.")

"""/v2.0/quotas: projects' limits of networks, subnets, ports and RBAC policies (the quotas
and quota_details extensions).

A project reads its own quotas; reading another's, listing every project's, and changing or
deleting any take upstream's ``get_quota``, ``update_quota`` and ``delete_quota``, an admin's.
The domain is :mod:`berth.network.quotas`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.network import exceptions, policy, quotas, validate
from berth.network.api.request import NetworkRequest

# What an update may say besides limits: skip the usage check, or ask for it (upstream's
# "force" and "check_limit"; without either, no check, as upstream today).
_UPDATE_FLAGS = ("force", "check_limit")


def list_quotas(req: NetworkRequest) -> Response:
    """``{"quotas": [{"project_id": P, "tenant_id": P, "network": 10, ...}]}``: the projects
    that have limits of their own."""
    policy.require_privileged(req.context, "get_quota")
    with req.service.db.read() as conn:
        found = quotas.projects_with_limits(conn, req.service.settings)
    return req.respond(
        {
            "quotas": [
                {"project_id": project_id, "tenant_id": project_id, **limits}
                for project_id, limits in found.items()
            ]
        }
    )


def show_quota(req: NetworkRequest) -> Response:
    """``{"quota": {"network": 100, "subnet": 100, "port": 500, "rbac_policy": 10}}``"""
    project_id = _readable(req)
    with req.service.db.read() as conn:
        limits = quotas.limits(conn, req.service.settings, project_id)
    return req.respond({"quota": limits})


def show_default(req: NetworkRequest) -> Response:
    """``{"quota": {...}}``: what a project without limits of its own gets."""
    _readable(req)
    return req.respond({"quota": quotas.defaults(req.service.settings)})


def show_details(req: NetworkRequest) -> Response:
    """``{"quota": {"network": {"limit": 100, "used": 2, "reserved": 0}, ...}}``: nothing is
    ever reserved (a create counts and adds in one transaction)."""
    project_id = _readable(req)
    with req.service.db.read() as conn:
        found = quotas.quotas(conn, req.service.settings, project_id)
    return req.respond(
        {
            "quota": {
                name: {"limit": quota.limit, "used": quota.used, "reserved": 0}
                for name, quota in found.items()
            }
        }
    )


def update_quota(req: NetworkRequest) -> Response:
    """``{"quota": {"port": 50, "check_limit": true}}`` answers the project's limits."""
    policy.require_privileged(req.context, "update_quota")
    project_id = req.param("project_id")
    body = req.resource_body("quota")
    validate.known(body, (*quotas.RESOURCES, *_UPDATE_FLAGS), "quota")
    check_limit = validate.boolean(body, "check_limit", False) and not validate.boolean(
        body, "force", False
    )
    new = {name: _limit(body, name) for name in quotas.RESOURCES if name in body}
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        quotas.set_limits(conn, req.service.settings, project_id, new, check_limit)
        limits = quotas.limits(conn, req.service.settings, project_id)
    return req.respond({"quota": limits})


def delete_quota(req: NetworkRequest) -> Response:
    """The project takes the defaults again."""
    policy.require_privileged(req.context, "delete_quota")
    with req.service.db.write() as conn:
        quotas.delete_limits(conn, req.param("project_id"))
    return req.no_content()


def _readable(req: NetworkRequest) -> str:
    """The project of the path, if the caller may read its quotas: its own, or any with
    ``get_quota``."""
    project_id = req.param("project_id")
    if project_id != req.context.project_id:
        policy.require_privileged(req.context, "get_quota")
    return project_id


def _limit(body: dict[str, Any], name: str) -> int:
    value = validate.integer(body, name, None, quotas.UNLIMITED, quotas.MAX_LIMIT)
    if value is None:
        raise exceptions.InvalidInput(f"Invalid input for {name}. Reason: an integer is needed.")
    return int(value)

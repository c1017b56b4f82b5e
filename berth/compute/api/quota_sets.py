"""/os-quota-sets/{tenant_id}: a project's limits (show, update, delete to take the defaults
again), the defaults every project starts from, and the limits with what is used (detail).

The domain is :mod:`berth.compute.quotas`; which resources show at which microversion is
:mod:`berth.compute.api.quota_views`. Quotas are per project: ``user_id`` is refused.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute import quotas
from berth.compute.api import quota_views as views
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-quota-sets:{}"


def show(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, "cores": 20, "instances": 10, ...}}``"""
    project_id = _authorized(req, "show")
    with req.service.api_db.read() as conn:
        limits = quotas.project_limits(conn, project_id)
    shown = views.limits_view(views.project_resources(req), limits)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def detail(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, "cores": {"in_use": 2, "limit": 20, "reserved": 0}, ...}}``"""
    project_id = _authorized(req, "detail")
    with req.service.api_db.read() as conn:
        found = quotas.project_quotas(conn, req.service.cells, project_id)
    shown = views.detail_view(views.project_resources(req), found)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def defaults(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, ...}}``: the default class's limits over Berth's defaults."""
    project_id = _authorized(req, "defaults")
    with req.service.api_db.read() as conn:
        limits = quotas.default_limits(conn)
    shown = views.limits_view(views.project_resources(req), limits)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def update(req: ComputeRequest) -> Response:
    """``{"quota_set": {"cores": 40, "force": false}}`` answers the project's limits, without
    ``id`` (as upstream). Unless ``force``, a limit below what is used is a 400."""
    project_id = _authorized(req, "update")
    resources = views.project_resources(req)
    body = req.resource_body("quota_set")
    force = views.parse_force(body.pop("force", False))
    limits = views.parse_limits(body, "quota_set", resources)
    quotas.prepare_project(req.service.api_db, project_id)
    with req.service.api_db.write() as conn:
        quotas.set_project_limits(conn, req.service.cells, project_id, limits, force)
        now = quotas.project_limits(conn, project_id)
    return req.respond({"quota_set": views.limits_view(resources, now)})


def delete(req: ComputeRequest) -> Response:
    """The project takes the defaults again; 202 (as upstream), no body."""
    project_id = _authorized(req, "delete")
    with req.service.api_db.write() as conn:
        quotas.delete_project_limits(conn, project_id)
    return req.no_content(202)


def _authorized(req: ComputeRequest, action: str) -> str:
    project_id = req.param("tenant_id")
    req.authorize(_RULE.format(action), {"project_id": project_id})
    views.refuse_user_id(req)
    return project_id

"""/os-quota-sets/{tenant_id}: a project's limits (show, update, delete to take the defaults
again), the defaults every project starts from, and the limits with what is used (detail).
``user_id`` in the query narrows show, update, delete and detail to one user of the project
(per-user quotas, below the project's).

The domain is :mod:`berth.compute.quotas` and :mod:`berth.compute.user_quotas`; which resources
show at which microversion is :mod:`berth.compute.api.quota_views`.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute import quotas, user_quotas
from berth.compute.api import quota_views as views
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-quota-sets:{}"


def show(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, "cores": 20, "instances": 10, ...}}``"""
    project_id, user_id = _authorized(req, "show")
    with req.service.api_db.read() as conn:
        if user_id is None:
            limits = quotas.project_limits(conn, project_id)
        else:
            limits = user_quotas.user_limits(conn, project_id, user_id)
    shown = views.limits_view(views.project_resources(req), limits)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def detail(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, "cores": {"in_use": 2, "limit": 20, "reserved": 0}, ...}}``"""
    project_id, user_id = _authorized(req, "detail")
    cells = req.service.cells
    with req.service.api_db.read() as conn:
        if user_id is None:
            found = quotas.project_quotas(conn, cells, project_id)
        else:
            found = user_quotas.user_quotas(conn, cells, project_id, user_id)
    shown = views.detail_view(views.project_resources(req), found)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def defaults(req: ComputeRequest) -> Response:
    """``{"quota_set": {"id": P, ...}}``: the default class's limits over Berth's defaults."""
    project_id = req.param("tenant_id")
    req.authorize(_RULE.format("defaults"), {"project_id": project_id})
    with req.service.api_db.read() as conn:
        limits = quotas.default_limits(conn)
    shown = views.limits_view(views.project_resources(req), limits)
    return req.respond({"quota_set": {"id": project_id, **shown}})


def update(req: ComputeRequest) -> Response:
    """``{"quota_set": {"cores": 40, "force": false}}`` answers the project's (or user's)
    limits, without ``id`` (as upstream). Unless ``force``, a limit below what is used is a
    400; a user's limits must fit in the project's whatever ``force`` says."""
    project_id, user_id = _authorized(req, "update")
    resources = views.project_resources(req)
    body = req.resource_body("quota_set")
    force = views.parse_force(body.pop("force", False))
    limits = views.parse_limits(body, "quota_set", resources)
    cells = req.service.cells
    quotas.prepare_project(req.service.api_db, project_id)
    with req.service.api_db.write() as conn:
        if user_id is None:
            quotas.set_project_limits(conn, cells, project_id, limits, force)
            now = quotas.project_limits(conn, project_id)
        else:
            user_quotas.set_user_limits(conn, cells, (project_id, user_id), limits, force)
            now = user_quotas.user_limits(conn, project_id, user_id)
    return req.respond({"quota_set": views.limits_view(resources, now)})


def delete(req: ComputeRequest) -> Response:
    """The project takes the defaults again (its users the project's limits), or the user the
    project's; 202 (as upstream), no body."""
    project_id, user_id = _authorized(req, "delete")
    with req.service.api_db.write() as conn:
        if user_id is None:
            quotas.delete_project_limits(conn, project_id)
        else:
            user_quotas.delete_user_limits(conn, project_id, user_id)
    return req.no_content(202)


def _authorized(req: ComputeRequest, action: str) -> tuple[str, str | None]:
    """The project of the path and the user of the query (None: the project's own quotas)."""
    project_id = req.param("tenant_id")
    req.authorize(_RULE.format(action), {"project_id": project_id})
    return project_id, views.user_id(req)

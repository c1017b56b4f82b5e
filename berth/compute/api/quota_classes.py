"""/os-quota-class-sets/{class_name}: a quota class's limits. The ``default`` class's limits are
the defaults of every project without limits of its own (``os-quota-sets/{id}/defaults`` shows
them); other classes are kept and shown, and change nothing, as upstream.

Which resources show at which microversion is :mod:`berth.compute.api.quota_views`.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute import quotas
from berth.compute.api import quota_views as views
from berth.compute.api.request import ComputeRequest


def show(req: ComputeRequest) -> Response:
    """``{"quota_class_set": {"id": "default", "cores": 20, "instances": 10, ...}}``"""
    class_name = req.param("class_name")
    req.authorize("os_compute_api:os-quota-class-sets:show", {"quota_class": class_name})
    with req.service.api_db.read() as conn:
        limits = quotas.class_limits(conn, class_name)
    shown = views.limits_view(views.class_resources(req), limits)
    return req.respond({"quota_class_set": {"id": class_name, **shown}})


def update(req: ComputeRequest) -> Response:
    """``{"quota_class_set": {"cores": 40}}`` answers the class's limits, without ``id``."""
    class_name = req.param("class_name")
    req.authorize("os_compute_api:os-quota-class-sets:update", {"quota_class": class_name})
    resources = views.class_resources(req)
    limits = views.parse_limits(req.resource_body("quota_class_set"), "quota_class_set", resources)
    with req.service.api_db.write() as conn:
        quotas.set_class_limits(conn, class_name, limits)
        now = quotas.class_limits(conn, class_name)
    return req.respond({"quota_class_set": views.limits_view(resources, now)})

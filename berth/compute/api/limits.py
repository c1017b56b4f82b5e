"""/limits: the caller's project's absolute limits and what it uses of them (an admin may ask
for another project's with ``tenant_id``). Berth has no rate limits: ``rate`` is empty.

Which limits show at which microversion is :mod:`berth.compute.api.quota_views`.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute import quotas
from berth.compute.api import quota_views as views
from berth.compute.api.request import ComputeRequest


def index(req: ComputeRequest) -> Response:
    """``{"limits": {"rate": [], "absolute": {"maxTotalInstances": 10, ...}}}``"""
    req.authorize("os_compute_api:limits")
    asked = [value for name, value in req.query_items if name == "tenant_id"]
    project_id = req.project_id
    if asked:
        project_id = asked[-1]
        req.authorize("os_compute_api:limits:other_project", {"project_id": project_id})
    with req.service.api_db.read() as conn:
        found = quotas.project_quotas(conn, req.service.cells, project_id)
    return req.respond({"limits": {"rate": [], "absolute": views.absolute_limits(req, found)}})

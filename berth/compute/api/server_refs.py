"""The server a sub-resource's URL names (``/servers/{server_id}/...``), for a caller a policy
rule allows."""

from __future__ import annotations

from berth.compute.api.request import ComputeRequest
from berth.compute.server_records import ServerRef


def authorized(req: ComputeRequest, rule: str) -> ServerRef:
    """The rule on the caller's own project first (403); then a server of a project the rule
    does not allow the caller on is a 404, hiding that it exists."""
    req.authorize(rule)
    return ServerRef(
        service=req.service,
        context=req.context,
        uuid=req.param("server_id"),
        may_see=lambda project_id: req.allowed(rule, {"project_id": project_id}),
    )

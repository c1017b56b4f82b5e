"""Server actions of a deferred delete (Nova's ``os-deferred-delete``): ``restore`` brings a
SOFT_DELETED server back (409 in any other state), ``forceDelete`` deletes a server at once,
soft-deleted or not. Both take ``null`` and answer 202. The domain is
:mod:`berth.compute.soft_delete`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import servers, soft_delete
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-deferred-delete:"


def restore(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = f"{_RULE}restore"
    req.authorize(rule)
    soft_delete.restore(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def force_delete(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = f"{_RULE}force"
    req.authorize(rule)
    servers.delete_server(req.service, req.context, server_id, _may_see(req, rule), force=True)
    return req.no_content(202)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})

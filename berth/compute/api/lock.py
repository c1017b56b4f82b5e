"""Server actions that lock and unlock a server (Nova's ``os-lock-server``), and the admin
actions ``os-resetState`` and ``injectNetworkInfo`` (Nova's ``os-admin-actions``).

Both answer 202; the server shows ``locked`` from 2.9. Locking takes ``null`` (a reason comes
with 2.73, above what Berth serves). Unlocking a lock taken by the other kind of caller (the
owner lifting an admin's lock) needs ``unlock:unlock_override`` too. The domain is
:mod:`berth.compute.locking`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import locking
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-lock-server:"


def lock(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = f"{_RULE}lock"
    req.authorize(rule)
    locking.lock(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def unlock(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = f"{_RULE}unlock"
    req.authorize(rule)
    may_see = _may_see(req, rule)
    if locking.locked_by_other(req.service, req.context, server_id, may_see):
        req.authorize(f"{rule}:unlock_override")
    locking.unlock(req.service, req.context, server_id, may_see)
    return req.no_content(202)


def reset_state(req: ComputeRequest, server_id: str, argument: dict[str, str]) -> Response:
    """``os-resetState`` (Nova's ``os-admin-actions``): force ``{"state": "active"}`` or
    ``"error"`` (the request schema's choice of two)."""
    rule = "os_compute_api:os-admin-actions:reset_state"
    req.authorize(rule)
    state = argument["state"]
    locking.reset_state(req.service, req.context, server_id, _may_see(req, rule), state)
    return req.no_content(202)


def inject_network_info(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-admin-actions:inject_network_info"
    req.authorize(rule)
    locking.inject_network_info(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})

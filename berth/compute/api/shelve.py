"""Server actions that shelve: shelve, shelveOffload, unshelve (Nova's ``os-shelve``).

Each takes ``null`` (or ``{}``) as its argument, as the request schema holds it to, and answers
202 once the work is handed over; the server then shows SHELVED or SHELVED_OFFLOADED, and
ACTIVE again after an unshelve. Unshelve's object form (``{"unshelve": {"availability_zone":
...}}``) belongs to microversion 2.77, above what Berth serves: the schema refuses it, and an
unshelved server keeps the zone it was booted into. The domain is
:mod:`berth.compute.shelving`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import shelving
from berth.compute.api.request import ComputeRequest
from berth.compute.service import ComputeService

_RULE = "os_compute_api:os-shelve:"

# The domain's call: (service, context, server id, may the caller act on this project's server).
_Task = Callable[..., None]


def shelve(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(req, server_id, "shelve", shelving.shelve)


def shelve_offload(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(req, server_id, "shelve_offload", shelving.shelve_offload)


def unshelve(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(req, server_id, "unshelve", shelving.unshelve)


def _act(req: ComputeRequest, server_id: str, rule: str, task: _Task) -> Response:
    """The policy rule on the caller's project, then the task on the server (a server the rule
    does not allow the caller on is a 404, hiding that it exists)."""
    name = f"{_RULE}{rule}"
    req.authorize(name)
    service: ComputeService = req.service
    task(
        service,
        req.context,
        server_id,
        lambda project_id: req.allowed(name, {"project_id": project_id}),
    )
    return req.no_content(202)

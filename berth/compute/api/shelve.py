"""Server actions that shelve: shelve, shelveOffload, unshelve (Nova's ``os-shelve``).

Each takes ``null`` (or ``{}``) as its argument and answers 202 once the work is handed over;
the server then shows SHELVED or SHELVED_OFFLOADED, and ACTIVE again after an unshelve.
Unshelve's object form (``{"unshelve": {"availability_zone": ...}}``) belongs to microversion
2.77, above what Berth serves: it is a 400 here, and an unshelved server keeps the zone it was
booted into. The domain
is :mod:`berth.compute.shelving`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, shelving
from berth.compute.api.request import ComputeRequest
from berth.compute.service import ComputeService

_RULE = "os_compute_api:os-shelve:"

# The domain's call: (service, context, server id, may the caller act on this project's server).
_Task = Callable[..., None]


def shelve(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(req, server_id, argument, "shelve", "shelve", shelving.shelve)


def shelve_offload(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(
        req, server_id, argument, "shelveOffload", "shelve_offload", shelving.shelve_offload
    )


def unshelve(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    return _act(req, server_id, argument, "unshelve", "unshelve", shelving.unshelve)


def _act(
    req: ComputeRequest, server_id: str, argument: Any, action: str, rule: str, task: _Task
) -> Response:
    """The policy rule on the caller's project, the argument, then the task on the server (a
    server the rule does not allow the caller on is a 404, hiding that it exists)."""
    name = f"{_RULE}{rule}"
    req.authorize(name)
    # Clients send null or {} (tempest's client {}); Nova takes both.
    if argument is not None and argument != {}:
        why = "null expected"
        if action == "unshelve":
            why += " (an availability zone may be named from microversion 2.77)"
        raise exceptions.BadRequest(f"Invalid input for {action}: {why}.")
    service: ComputeService = req.service
    task(
        service,
        req.context,
        server_id,
        lambda project_id: req.allowed(name, {"project_id": project_id}),
    )
    return req.no_content(202)

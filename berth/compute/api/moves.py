"""Server actions that move a server: migrate, resize, confirmResize, revertResize,
os-migrateLive.

Each answers 202 (confirm 204) once the move is handed over; the server then shows RESIZE, and
VERIFY_RESIZE once it runs on the destination. The domain is :mod:`berth.compute.moves`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions, guest_input, moves
from berth.compute.api.request import ComputeRequest

_MIGRATE = "os_compute_api:os-migrate-server:migrate"
_CROSS_CELL = "compute:servers:resize:cross_cell"


def migrate(req: ComputeRequest, server_id: str, argument: dict[str, Any] | None) -> Response:
    """``{"migrate": null}``; from 2.56 ``{"migrate": {"host": name | null}}`` (the request
    schema holds it to its microversion)."""
    req.authorize(_MIGRATE)
    host = argument.get("host") if argument else None
    if host is not None:
        req.authorize(f"{_MIGRATE}:host")
    moves.migrate(
        req.service, req.context, server_id, _may_see(req, _MIGRATE), host, _cross_cell(req)
    )
    return req.no_content(202)


def migrate_live(req: ComputeRequest, server_id: str, argument: dict[str, Any]) -> Response:
    """``{"os-migrateLive": {"host": name | null, "block_migration": ..., ...}}``, held to its
    microversion by the request schema; a simulated host copies no disk, so block_migration
    is not used, and a named host is checked by the scheduler whether forced or not."""
    rule = f"{_MIGRATE}_live"
    req.authorize(rule)
    host = argument["host"]
    moves.live_migrate(req.service, req.context, server_id, _may_see(req, rule), host)
    return req.no_content(202)


def resize(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:resize"
    req.authorize(rule)
    if not isinstance(argument, dict) or not isinstance(argument.get("flavorRef"), str | int):
        raise exceptions.BadRequest("Invalid input for resize: flavorRef is required.")
    unknown = set(argument) - {"flavorRef", "OS-DCF:diskConfig"}
    if unknown:
        raise exceptions.BadRequest(f"Invalid input for resize: unknown keys {sorted(unknown)}.")
    flavor_ref = str(argument["flavorRef"]).strip()
    if not flavor_ref:
        raise exceptions.BadRequest("Invalid input for resize: flavorRef is empty.")
    moves.resize(
        req.service, req.context, server_id, _may_see(req, rule), flavor_ref, _cross_cell(req),
        guest_input.disk_config(argument.get("OS-DCF:diskConfig")),
    )  # fmt: skip
    return req.no_content(202)


def confirm_resize(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:confirm_resize"
    req.authorize(rule)
    moves.confirm_resize(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(204)


def revert_resize(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:revert_resize"
    req.authorize(rule)
    moves.revert_resize(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def _cross_cell(req: ComputeRequest) -> bool:
    """Whether the move may leave the server's cell (Nova's rule; nobody by default)."""
    return req.allowed(_CROSS_CELL)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})

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
from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest

_MIGRATE = "os_compute_api:os-migrate-server:migrate"
_CROSS_CELL = "compute:servers:resize:cross_cell"


def migrate(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    req.authorize(_MIGRATE)
    host = _migrate_host(req, argument)
    if host is not None:
        req.authorize(f"{_MIGRATE}:host")
    moves.migrate(
        req.service, req.context, server_id, _may_see(req, _MIGRATE), host, _cross_cell(req)
    )
    return req.no_content(202)


def migrate_live(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = f"{_MIGRATE}_live"
    req.authorize(rule)
    host = _live_host(req, argument)
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
    _no_argument("confirmResize", argument)
    moves.confirm_resize(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(204)


def revert_resize(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:revert_resize"
    req.authorize(rule)
    _no_argument("revertResize", argument)
    moves.revert_resize(req.service, req.context, server_id, _may_see(req, rule))
    return req.no_content(202)


def _migrate_host(req: ComputeRequest, argument: Any) -> str | None:
    """``{"migrate": null}``; from 2.56 ``{"migrate": {"host": "name" | null}}``."""
    if argument is None:
        return None
    if not isinstance(argument, dict):
        raise exceptions.BadRequest("Invalid input for migrate: null or an object expected.")
    if not req.at_least(microversion.MIGRATE_TO_HOST):
        if argument:
            raise exceptions.BadRequest(
                "Invalid input for migrate: a host may be named from microversion 2.56."
            )
        return None
    unknown = set(argument) - {"host"}
    if unknown:
        raise exceptions.BadRequest(f"Invalid input for migrate: unknown keys {sorted(unknown)}.")
    return _host_name("migrate", argument.get("host"))


def _host_name(action: str, host: Any) -> str | None:
    if host is not None and (not isinstance(host, str) or not host.strip() or len(host) > 255):
        raise exceptions.BadRequest(
            f"Invalid input for {action}: host is null or a name of 1 to 255 characters."
        )
    return host


def _live_host(req: ComputeRequest, argument: Any) -> str | None:
    """``{"os-migrateLive": {"host": name | null, "block_migration": bool (or "auto" from
    2.25), "disk_over_commit": bool (before 2.25 only), "force": bool (from 2.30)}}``; a
    simulated host copies no disk, so block_migration is checked, not used, and a named host is
    checked by the scheduler whether forced or not."""
    if not isinstance(argument, dict):
        raise exceptions.BadRequest("Invalid input for os-migrateLive: an object is expected.")
    auto = req.at_least(microversion.LIVE_MIGRATION_AUTO)
    allowed = {"host", "block_migration"} | (set() if auto else {"disk_over_commit"})
    if req.at_least(microversion.LIVE_MIGRATION_FORCE):
        allowed.add("force")
    unknown = set(argument) - allowed
    missing = {"host", "block_migration"} - set(argument)
    if not auto and "disk_over_commit" not in argument:
        missing.add("disk_over_commit")
    if unknown or missing:
        raise exceptions.BadRequest(
            f"Invalid input for os-migrateLive: unknown keys {sorted(unknown)}, "
            f"missing keys {sorted(missing)}."
        )
    block = argument["block_migration"]
    if not isinstance(block, bool) and not (auto and block == "auto"):
        raise exceptions.BadRequest(
            f"Invalid input for os-migrateLive: block_migration {block!r} is not a boolean"
            + (" or 'auto'." if auto else ".")
        )
    for flag in ("disk_over_commit", "force"):
        if flag in argument and not isinstance(argument[flag], bool):
            raise exceptions.BadRequest(f"Invalid input for os-migrateLive: {flag} is a boolean.")
    return _host_name("os-migrateLive", argument["host"])


def _no_argument(action: str, argument: Any) -> None:
    if argument not in (None, {}):
        raise exceptions.BadRequest(f"Invalid input for {action}: it takes no argument (null).")


def _cross_cell(req: ComputeRequest) -> bool:
    """Whether the move may leave the server's cell (Nova's rule; nobody by default)."""
    return req.allowed(_CROSS_CELL)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})

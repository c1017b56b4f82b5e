"""/os-instance_usage_audit_log: what the compute hosts' usage audits recorded for the last
completed audit period (index), or for the last one completed before a time (show, the time in
the path: ``2026-11-26 10:00:00``, with optional microseconds). Admins only.

The domain is :mod:`berth.compute.usage_audit`.
"""

from __future__ import annotations

import datetime as dt

from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.compute import audit_periods, exceptions, usage_audit
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-instance-usage-audit-log:{}"
_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")


def index(req: ComputeRequest) -> Response:
    """``{"instance_usage_audit_logs": {"period_beginning": ..., "log": {host: {...}}, ...}}``"""
    req.authorize(_RULE.format("list"))
    return req.respond({"instance_usage_audit_logs": _log(req, utcnow())})


def show(req: ComputeRequest) -> Response:
    """``{"instance_usage_audit_log": {...}}``, the same document for the period before."""
    req.authorize(_RULE.format("show"))
    before = _timestamp(req.param("before_timestamp"))
    return req.respond({"instance_usage_audit_log": _log(req, before)})


def _log(req: ComputeRequest, before: dt.datetime) -> dict[str, object]:
    period = audit_periods.last_completed(req.service.settings.instance_usage_audit_period, before)
    return usage_audit.period_log(req.service.cells, period)


def _timestamp(text: str) -> dt.datetime:
    for form in _FORMATS:
        try:
            return dt.datetime.strptime(text, form)
        except ValueError:
            continue
    raise exceptions.BadRequest(
        f"Invalid timestamp for date {text}: 'YYYY-MM-DD HH:MM:SS' expected."
    )

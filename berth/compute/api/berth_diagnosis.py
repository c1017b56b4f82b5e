"""/os-berth-diagnosis/{server_id}: why the scheduler found no host for a server (Berth's own
extension of the Compute API, for admins, the same at every microversion)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import diagnoses
from berth.compute.api.request import ComputeRequest


def show(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-berth-diagnosis:show")
    failure = diagnoses.last_failure(req.service, req.param("server_id"))
    return req.respond({"diagnosis": _transform_failure(failure)})


def _transform_failure(failure: diagnoses.ScheduleFailure) -> dict[str, Any]:
    """The diagnosis document (``Diagnosis.to_json``) with where it comes from::

    {"server_id": "...", "fault_message": "No valid host was found. ...",
     "created_at": "2026-11-26T15:00:00.000000", "v": "1.1",
     "hosts": 3, "placement_hosts": 0, "available": 0, "stages": [...],
     "placement_shortfall": {"resources": {...}, "traits": {...}},
     "groups": [{"owner": "flavor" | PORT_ID, "port_id": ..., "request_group": ...,
                 "suffix": "", "met_alone": false,
                 "shortfalls": [{"code": "insufficient-resource", "subject": "VCPU",
                                 "amount": 64, "detail": {}}]}],
     "together": [], "message": "0/3 hosts are available: ..."}
    """
    return {
        "server_id": failure.server_id,
        "fault_message": failure.message,
        "created_at": failure.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f"),
        **failure.diagnosis.to_json(),
    }

"""The latest scheduling decisions as the capacity view shows them: each new server, where it
went or that it went nowhere, and, when the scheduler found no host, its diagnosis in words
(the same sentences as the fault and ``berth diagnosis``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.server_views import from_instance


@dataclass(frozen=True, slots=True)
class Decision:
    instance: Mapping[str, Any]
    cell: str
    # The newest fault, if the server has one.
    fault: Mapping[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """::

        {"server_id": "...", "name": "vm1", "created": "2026-11-26T17:00:00Z", "status": "ERROR",
         "host": null, "cell": "cell0", "outcome": "no host", "fault": "No valid host ...",
         "explanation": {"summary": "0/8 hosts are available: ...", "groups": [...],
                         "together": [...], "stages": [...]}}
        """
        server = from_instance(self.instance, 0)
        diagnosis = None
        if self.fault is not None and self.fault["diagnosis"]:
            diagnosis = Diagnosis.from_json(self.fault["diagnosis"])
        return {
            "server_id": server.uuid,
            "name": server.name,
            "created": server.created_at,
            "status": server.status,
            "host": server.host,
            "cell": self.cell,
            "outcome": _outcome(server.host, diagnosis, self.fault),
            "fault": None if self.fault is None else self.fault["message"],
            "explanation": None if diagnosis is None else explanation(diagnosis),
        }


def _outcome(host: str | None, diagnosis: Diagnosis | None, fault: Mapping[str, Any] | None) -> str:
    if diagnosis is not None:
        # A failed move leaves the server on its host: the newest decision still found none.
        return "no host"
    if host is not None:
        return "placed"
    return "failed" if fault is not None else "pending"


def explanation(diagnosis: Diagnosis) -> dict[str, Any]:
    """The diagnosis in sentences, by request group and by filter."""
    return {
        "summary": diagnosis.render(),
        "hosts": diagnosis.hosts,
        "placement_hosts": diagnosis.placement_hosts,
        "available": diagnosis.available,
        "groups": [
            {
                "name": "flavor" if group.port_id is None else f"port {group.port_id}",
                "met_alone": group.met_alone,
                "short": [s.render() for s in group.shortfalls],
            }
            for group in diagnosis.groups
        ],
        "together": [s.render() for s in diagnosis.together],
        "stages": [
            {"name": s.name, "removed": s.removed, "reasons": dict(s.reasons)}
            for s in diagnosis.stages
        ],
    }

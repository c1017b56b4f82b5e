"""BuildFailureWeigher: minus the host's recent build failures, so a host that keeps failing
sinks below healthy ones. The large default multiplier makes one failure outweigh any amount of
free capacity (with the other multipliers at their defaults)."""

from __future__ import annotations

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers.base import HostWeigher


class BuildFailureWeigher(HostWeigher):
    NAME = "BuildFailureWeigher"
    DEFAULT_MULTIPLIER = 1_000_000.0

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        return -float(host.failed_builds)

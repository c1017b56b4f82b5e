"""RAMWeigher: free memory on the host after the candidate; positive multipliers spread."""

from __future__ import annotations

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers.base import HostWeigher


class RAMWeigher(HostWeigher):
    NAME = "RAMWeigher"

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        return float(host.free_ram_mb - candidate.host_amount("MEMORY_MB"))

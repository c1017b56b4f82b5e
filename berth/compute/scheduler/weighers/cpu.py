"""CPUWeigher: free VCPUs on the host after the candidate; positive multipliers spread."""

from __future__ import annotations

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers.base import HostWeigher


class CPUWeigher(HostWeigher):
    NAME = "CPUWeigher"

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        return float(host.free_vcpus - candidate.host_amount("VCPU"))

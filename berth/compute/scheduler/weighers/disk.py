"""DiskWeigher: free local disk on the host after the candidate. Disk the candidate takes from
a sharing provider (a storage pool) leaves the host's own disk alone, so two candidates of one
host can weigh differently."""

from __future__ import annotations

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers.base import HostWeigher


class DiskWeigher(HostWeigher):
    NAME = "DiskWeigher"

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        return float(host.free_disk_gb - candidate.host_amount("DISK_GB"))

"""ServerGroupSoftAntiAffinityWeigher: for a ``soft-anti-affinity`` group, minus the members
already on the host (this request's earlier instances included); nothing for other requests."""

from __future__ import annotations

from berth.compute.objects.request_spec import SOFT_ANTI_AFFINITY, RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.weighers.base import HostWeigher


class ServerGroupSoftAntiAffinityWeigher(HostWeigher):
    NAME = "ServerGroupSoftAntiAffinityWeigher"

    def same_for_every_host(self, spec: RequestSpec) -> bool:
        return spec.server_group is None or spec.server_group.policy != SOFT_ANTI_AFFINITY

    def raw(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> float:
        group = spec.server_group
        if group is None or group.policy != SOFT_ANTI_AFFINITY:
            return 0.0
        return -float(group.members_on(host.host))

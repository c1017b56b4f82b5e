"""ServerGroupAntiAffinityFilter: a member of an ``anti-affinity`` group avoids the hosts that
already hold ``max_server_per_host`` of its members (one, unless the group's rule says more).

    host-in-group   the host holds as many members as the group allows

Later instances of one request see the hosts the earlier ones were given.
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import ANTI_AFFINITY, RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

HOST_IN_GROUP: Final = "host-in-group"


class ServerGroupAntiAffinityFilter(HostFilter):
    NAME = "ServerGroupAntiAffinityFilter"
    REASONS = frozenset({HOST_IN_GROUP})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return spec.server_group is None or spec.server_group.policy != ANTI_AFFINITY

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        group = spec.server_group
        if group is None or group.policy != ANTI_AFFINITY:
            return None
        if group.members_on(host.host) >= group.max_server_per_host:
            return HOST_IN_GROUP
        return None

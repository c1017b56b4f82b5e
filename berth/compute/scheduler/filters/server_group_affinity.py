"""ServerGroupAffinityFilter: a member of an ``affinity`` group goes where the group already is.

    not-group-host   the group has members and none is on this host

The first member may go anywhere; the instances of one request follow the first of them (the
pipeline passes each later instance a spec whose group includes the hosts chosen so far).
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import AFFINITY, RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

NOT_GROUP_HOST: Final = "not-group-host"


class ServerGroupAffinityFilter(HostFilter):
    NAME = "ServerGroupAffinityFilter"
    REASONS = frozenset({NOT_GROUP_HOST})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        group = spec.server_group
        return group is None or group.policy != AFFINITY or not group.hosts

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        group = spec.server_group
        if group is None or group.policy != AFFINITY or not group.hosts:
            return None
        return None if host.host in group.hosts else NOT_GROUP_HOST

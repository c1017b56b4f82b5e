"""SameHostFilter: with the ``same_host`` hint, the host must run one of the named instances.

not-with-instances   none of the named instances is on the host
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

NOT_WITH_INSTANCES: Final = "not-with-instances"


class SameHostFilter(HostFilter):
    NAME = "SameHostFilter"
    REASONS = frozenset({NOT_WITH_INSTANCES})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return not spec.hints.same_host

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        wanted = spec.hints.same_host
        if wanted and host.instances.isdisjoint(wanted):
            return NOT_WITH_INSTANCES
        return None

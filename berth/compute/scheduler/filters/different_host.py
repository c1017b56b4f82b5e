"""DifferentHostFilter: with the ``different_host`` hint, the host must run none of the named
instances.

    with-instances   one of the named instances is on the host
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

WITH_INSTANCES: Final = "with-instances"


class DifferentHostFilter(HostFilter):
    NAME = "DifferentHostFilter"
    REASONS = frozenset({WITH_INSTANCES})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return not spec.hints.different_host

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        if not host.instances.isdisjoint(spec.hints.different_host):
            return WITH_INSTANCES
        return None

"""ComputeFilter: the host's compute service must be enabled and reporting.

    disabled   an operator disabled the service
    down       the service stopped reporting

Placement already leaves out nodes with ``COMPUTE_STATUS_DISABLED``; that trait follows the
service record with a delay, and a service that is down is not visible to Placement at all.
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

DISABLED: Final = "disabled"
DOWN: Final = "down"


class ComputeFilter(HostFilter):
    NAME = "ComputeFilter"
    REASONS = frozenset({DISABLED, DOWN})

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        if host.disabled:
            return DISABLED
        if not host.up:
            return DOWN
        return None

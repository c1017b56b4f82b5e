"""AvailabilityZoneFilter: the host must be in the zone the request asks for.

    wrong-az   the host is in another zone

The Placement query already asks for the zone's aggregates; hosts of the default zone are in no
zone aggregate, so only this filter can keep a request for the default zone on them.
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

WRONG_AZ: Final = "wrong-az"


class AvailabilityZoneFilter(HostFilter):
    NAME = "AvailabilityZoneFilter"
    REASONS = frozenset({WRONG_AZ})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return not spec.availability_zone

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        if spec.availability_zone and spec.availability_zone != host.availability_zone:
            return WRONG_AZ
        return None

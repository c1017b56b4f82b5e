"""RequestedDestinationFilter: hosts the request excludes or names.

    ignored-host         the host is in ``ignore_hosts`` (a migration's source, a host this
                         build already failed on)
    not-requested-host   the request names another host
    not-requested-node   the request names another node
    not-requested-cell   the request names another cell

Always the first stage (the pipeline adds it when the configuration leaves it out): without it a
reschedule could land on the host that just failed.
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

IGNORED_HOST: Final = "ignored-host"
NOT_REQUESTED_HOST: Final = "not-requested-host"
NOT_REQUESTED_NODE: Final = "not-requested-node"
NOT_REQUESTED_CELL: Final = "not-requested-cell"


class RequestedDestinationFilter(HostFilter):
    NAME = "RequestedDestinationFilter"
    REASONS = frozenset({IGNORED_HOST, NOT_REQUESTED_HOST, NOT_REQUESTED_NODE, NOT_REQUESTED_CELL})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return not spec.ignore_hosts and spec.destination is None

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        if host.host in spec.ignore_hosts:
            return IGNORED_HOST
        wanted = spec.destination
        if wanted is None:
            return None
        if wanted.host and wanted.host != host.host:
            return NOT_REQUESTED_HOST
        if wanted.node and wanted.node != host.node:
            return NOT_REQUESTED_NODE
        if wanted.cell_uuid and wanted.cell_uuid != host.cell_uuid:
            return NOT_REQUESTED_CELL
        return None

"""AggregateInstanceExtraSpecsFilter: a flavor extra spec
``aggregate_instance_extra_specs:<key>=<value>`` needs a host whose aggregates have metadata
``<key>`` with that value. An aggregate value may list several, comma separated; the extra spec
may offer alternatives as ``a <or> b``.

    metadata-missing    no aggregate of the host has the key
    metadata-mismatch   the host's aggregates have the key, with other values

Only scoped keys count: unscoped extra specs belong to other consumers (drivers, Placement).
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState

SCOPE: Final = "aggregate_instance_extra_specs:"
METADATA_MISSING: Final = "metadata-missing"
METADATA_MISMATCH: Final = "metadata-mismatch"


class AggregateInstanceExtraSpecsFilter(HostFilter):
    NAME = "AggregateInstanceExtraSpecsFilter"
    REASONS = frozenset({METADATA_MISSING, METADATA_MISMATCH})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return not any(key.startswith(SCOPE) for key in spec.flavor.extra_specs)

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        for key, wanted in sorted(spec.flavor.extra_specs.items()):
            if not key.startswith(SCOPE):
                continue
            values = host.aggregate_metadata(key.removeprefix(SCOPE))
            if not values:
                return METADATA_MISSING
            if values.isdisjoint(w.strip() for w in wanted.split("<or>")):
                return METADATA_MISMATCH
        return None

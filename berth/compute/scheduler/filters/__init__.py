"""Host filters: one module each, a NAME, fixed reason codes (see ``base``), and the pipeline.

The pipeline is data: a list of filter names from the configuration, run in that order, cheapest
and most general first. ``RequestedDestinationFilter`` always runs first, listed or not.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Final

from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters.aggregate_instance_extra_specs import (
    AggregateInstanceExtraSpecsFilter,
)
from berth.compute.scheduler.filters.availability_zone import AvailabilityZoneFilter
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.filters.compute_status import ComputeFilter
from berth.compute.scheduler.filters.different_host import DifferentHostFilter
from berth.compute.scheduler.filters.image_properties import ImagePropertiesFilter
from berth.compute.scheduler.filters.pci_passthrough import PciPassthroughFilter
from berth.compute.scheduler.filters.requested_destination import RequestedDestinationFilter
from berth.compute.scheduler.filters.same_host import SameHostFilter
from berth.compute.scheduler.filters.server_group_affinity import ServerGroupAffinityFilter
from berth.compute.scheduler.filters.server_group_anti_affinity import (
    ServerGroupAntiAffinityFilter,
)
from berth.compute.scheduler.host_state import HostState

__all__ = [
    "DEFAULT_FILTERS",
    "FILTERS",
    "AggregateInstanceExtraSpecsFilter",
    "AvailabilityZoneFilter",
    "ComputeFilter",
    "DifferentHostFilter",
    "FilterMemo",
    "HostFilter",
    "ImagePropertiesFilter",
    "PciPassthroughFilter",
    "RequestedDestinationFilter",
    "SameHostFilter",
    "ServerGroupAffinityFilter",
    "ServerGroupAntiAffinityFilter",
    "build_pipeline",
    "run_filters",
]

FILTERS: Final[Mapping[str, type[HostFilter]]] = {
    cls.NAME: cls
    for cls in (
        RequestedDestinationFilter,
        ComputeFilter,
        AvailabilityZoneFilter,
        ImagePropertiesFilter,
        AggregateInstanceExtraSpecsFilter,
        SameHostFilter,
        DifferentHostFilter,
        ServerGroupAntiAffinityFilter,
        ServerGroupAffinityFilter,
        PciPassthroughFilter,
    )
}

# The order is the pipeline: each stage only sees the hosts the ones before it kept.
DEFAULT_FILTERS: Final = (
    RequestedDestinationFilter.NAME,  # names and exclusions in the request: a set lookup
    ComputeFilter.NAME,  # the service is enabled and up
    AvailabilityZoneFilter.NAME,  # the zone (Placement only knows zones with aggregates)
    ImagePropertiesFilter.NAME,  # the hypervisor runs the image
    AggregateInstanceExtraSpecsFilter.NAME,  # flavor extra specs vs aggregate metadata
    SameHostFilter.NAME,  # hints naming instances
    DifferentHostFilter.NAME,
    ServerGroupAntiAffinityFilter.NAME,  # server groups, with this request's earlier instances
    ServerGroupAffinityFilter.NAME,
    PciPassthroughFilter.NAME,  # per candidate: the VF behind each port's bandwidth
)


def build_pipeline(names: Sequence[str]) -> tuple[HostFilter, ...]:
    """The filters named, in order, ``RequestedDestinationFilter`` first whether named or not.
    Raises ValueError for an unknown or repeated name."""
    unknown = [n for n in names if n not in FILTERS]
    if unknown:
        raise ValueError(
            f"unknown scheduler filter(s): {', '.join(unknown)}; known: {', '.join(FILTERS)}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"a scheduler filter is listed twice: {', '.join(names)}")
    first = RequestedDestinationFilter.NAME
    ordered = [first, *(n for n in names if n != first)]
    return tuple(FILTERS[n]() for n in ordered)


class FilterMemo:
    """The pipeline's outcome per host state, kept for the rest of one pass.

    Filters are pure functions of the host state, the spec and the candidate (``base``), and a
    host's state is a new value once an instance lands on it. So while the spec is the same
    object, a host state seen again with the same candidates has the same outcome: the members
    of a batch, and the instances of a request without a server group, only pay the filters for
    the hosts that changed. Keyed by identity; the values hold the host state and candidates, so
    no identity is reused while the memo lives.
    """

    def __init__(self) -> None:
        self._spec: RequestSpec | None = None
        self._pipeline: tuple[HostFilter, ...] = ()
        self._outcomes: dict[int, tuple[HostState, list[Candidate], _Outcome]] = {}
        self._stages: list[tuple[int, HostFilter]] = []

    def outcomes(
        self,
        options: Mapping[str, tuple[HostState, list[Candidate]]],
        spec: RequestSpec,
        pipeline: Sequence[HostFilter],
    ) -> list[_Outcome]:
        """Each host's outcome, in the order of ``options``."""
        if spec is not self._spec or tuple(pipeline) != self._pipeline:
            self._spec, self._pipeline, self._outcomes = spec, tuple(pipeline), {}
            self._stages = _asking(pipeline, spec)
        known, stages = self._outcomes, self._stages
        found = []
        for host, candidates in options.values():
            seen = known.get(id(host))
            if seen is not None and seen[0] is host and _same(seen[1], candidates):
                found.append(seen[2])
                continue
            outcome = _filter_host(host, candidates, spec, stages)
            known[id(host)] = (host, candidates, outcome)
            found.append(outcome)
        return found


# What the pipeline made of one host: the candidates that passed every stage, or, when none
# did, the stage (its index and name) that removed the host and the reason.
_Outcome = tuple[list[Candidate], tuple[int, str, str] | None]


def run_filters(
    options: Mapping[str, tuple[HostState, list[Candidate]]],
    spec: RequestSpec,
    pipeline: Sequence[HostFilter],
    recorder: Recorder,
    memo: FilterMemo | None = None,
) -> dict[str, tuple[HostState, list[Candidate]]]:
    """Run the pipeline over ``node uuid -> (host, candidates)``; keep each host's candidates
    that pass every stage. A host left with none is recorded as removed by the stage that
    emptied it, with the reason of its first candidate there; removals are recorded stage by
    stage in pipeline order, hosts in the order given."""
    survivors: dict[str, tuple[HostState, list[Candidate]]] = {}
    removals: list[tuple[int, str, str]] = []
    outcomes = (memo or FilterMemo()).outcomes(options, spec, pipeline)
    for (node, (host, _)), (kept, removed) in zip(options.items(), outcomes, strict=True):
        if removed is None:
            survivors[node] = (host, kept)
        else:
            removals.append(removed)
    for _, stage, reason in sorted(removals, key=lambda removal: removal[0]):
        recorder.removed(stage, reason)
    return survivors


def _asking(pipeline: Sequence[HostFilter], spec: RequestSpec) -> list[tuple[int, HostFilter]]:
    """The stages that may refuse a host for ``spec``, with their places in the pipeline: the
    others would pass every host, so asking them host by host is skipped."""
    return [(i, stage) for i, stage in enumerate(pipeline) if not stage.passes_every_host(spec)]


def _filter_host(
    host: HostState,
    candidates: list[Candidate],
    spec: RequestSpec,
    stages: Sequence[tuple[int, HostFilter]],
) -> _Outcome:
    """One host through the pipeline, stage by stage."""
    kept = list(candidates)
    for index, stage in stages:
        passed: list[Candidate] = []
        first_reason: str | None = None
        for candidate in kept:
            reason = stage.check(host, spec, candidate)
            if reason is None:
                passed.append(candidate)
                continue
            if reason not in stage.REASONS:
                raise RuntimeError(f"{stage.NAME} gave an undeclared reason {reason!r}")
            first_reason = first_reason or reason
        if not passed:
            return [], (index, stage.NAME, first_reason or "")
        kept = passed
    return kept, None


def _same(seen: list[Candidate], candidates: list[Candidate]) -> bool:
    return len(seen) == len(candidates) and all(map(operator.is_, seen, candidates))

"""Host filters: one module each, a NAME, fixed reason codes (see ``base``), and the pipeline.

The pipeline is data: a list of filter names from the configuration, run in that order, cheapest
and most general first. ``RequestedDestinationFilter`` always runs first, listed or not.
"""

from __future__ import annotations

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
    "HostFilter",
    "ImagePropertiesFilter",
    "PciPassthroughFilter",
    "RequestedDestinationFilter",
    "SameHostFilter",
    "ServerGroupAffinityFilter",
    "ServerGroupAntiAffinityFilter",
    "asking",
    "build_pipeline",
    "filter_host",
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


# What the pipeline made of one host: the candidates that passed every stage, or, when none
# did, the stage (its index and name) that removed the host and the reason.
_Outcome = tuple[list[Candidate], tuple[int, str, str] | None]


def run_filters(
    options: Mapping[str, tuple[HostState, list[Candidate]]],
    spec: RequestSpec,
    pipeline: Sequence[HostFilter],
    recorder: Recorder,
) -> dict[str, tuple[HostState, list[Candidate]]]:
    """Run the pipeline over ``node uuid -> (host, candidates)``; keep each host's candidates
    that pass every stage. A host left with none is recorded as removed by the stage that
    emptied it, with the reason of its first candidate there; removals are recorded stage by
    stage in pipeline order, hosts in the order given."""
    survivors: dict[str, tuple[HostState, list[Candidate]]] = {}
    removals: list[tuple[int, str, str]] = []
    stages = asking(pipeline, spec)
    for node, (host, candidates) in options.items():
        kept, removed = filter_host(host, candidates, spec, stages)
        if removed is None:
            survivors[node] = (host, kept)
        else:
            removals.append(removed)
    for _, stage, reason in sorted(removals, key=lambda removal: removal[0]):
        recorder.removed(stage, reason)
    return survivors


def asking(pipeline: Sequence[HostFilter], spec: RequestSpec) -> list[tuple[int, HostFilter]]:
    """The stages that may refuse a host for ``spec``, with their places in the pipeline: the
    others would pass every host, so asking them host by host is skipped."""
    return [(i, stage) for i, stage in enumerate(pipeline) if not stage.passes_every_host(spec)]


def filter_host(
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

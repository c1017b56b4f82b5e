"""The scheduler's settings, as one frozen value (the service maps its configuration to it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from berth.compute.scheduler.filters import DEFAULT_FILTERS
from berth.compute.scheduler.placement_query import DEFAULT_LIMIT
from berth.compute.scheduler.weighers import DEFAULT_WEIGHERS
from berth.config import ComputeSettings

__all__ = ["SchedulerConfig", "scheduler_config"]


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    # The filter pipeline, in order (RequestedDestinationFilter always runs first).
    enabled_filters: tuple[str, ...] = DEFAULT_FILTERS
    weighers: tuple[str, ...] = DEFAULT_WEIGHERS
    # Weigher name -> multiplier; a weigher not named here keeps its default.
    weigher_multipliers: Mapping[str, float] = field(default_factory=dict)
    # Choose at random among this many best hosts, so that concurrent schedulers working from
    # the same view do not all race for the single best one.
    host_subset_size: int = 1
    # Hosts one instance may be tried on: the chosen one and up to max_attempts - 1 alternates.
    max_attempts: int = 3
    # ``limit`` of the Placement query.
    max_placement_results: int = DEFAULT_LIMIT
    # The seed of the shuffles and random picks; None derives one from the request.
    seed: int | None = None
    # Concurrent requests of the same shape share one pass (berth.compute.scheduler.batching).
    batching: bool = True

    def __post_init__(self) -> None:
        if self.host_subset_size < 1:
            raise ValueError("host_subset_size must be at least 1")
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.max_placement_results < 1:
            raise ValueError("max_placement_results must be at least 1")


def scheduler_config(settings: ComputeSettings) -> SchedulerConfig:
    """The scheduler's value of the compute settings."""
    return SchedulerConfig(
        enabled_filters=tuple(settings.enabled_filters or DEFAULT_FILTERS),
        weigher_multipliers=dict(settings.weigher_multipliers),
        host_subset_size=settings.host_subset_size,
        max_attempts=settings.max_attempts,
        max_placement_results=settings.placement_limit,
        batching=settings.scheduler_batching,
    )

"""The compute scheduler's pure core: a RequestSpec to one Placement query, Placement's
candidates through filters and weighers to Selections with alternates, and a diagnosis when no
host fits. No HTTP, no database, no bus: the service around it fetches, claims and replies.

    query = build_query(spec, az_aggregates=zones, limit=config.max_placement_results)
    sent = placement.get("/allocation_candidates", params=query.pairs(),
                         headers={"OpenStack-API-Version": f"placement {query.microversion}"})
    answer = read_answer(sent.content, query.microversion)
    schedule = Scheduler(config).select_destinations(
        spec, answer.candidates, host_states, claim, provider_summaries=answer.summaries)
"""

from berth.compute.objects.diagnosis import Diagnosis, StageOutcome
from berth.compute.objects.request_spec import (
    Destination,
    Flavor,
    Image,
    PortRequest,
    RequestSpec,
    SchedulerHints,
    ServerGroup,
)
from berth.compute.scheduler.candidates import (
    Candidate,
    PlacementAnswer,
    ProviderSummary,
    ProviderUsage,
    read_answer,
)
from berth.compute.scheduler.config import SchedulerConfig
from berth.compute.scheduler.host_state import Aggregate, HostState
from berth.compute.scheduler.placement_query import (
    MappingError,
    PlacementQuery,
    QueryError,
    build_query,
    group_suffix,
    port_allocations,
)
from berth.compute.scheduler.selection import (
    Claim,
    NoValidHost,
    Schedule,
    Scheduler,
    Selection,
    select_destinations,
)

__all__ = [
    "Aggregate",
    "Candidate",
    "Claim",
    "Destination",
    "Diagnosis",
    "Flavor",
    "HostState",
    "Image",
    "MappingError",
    "NoValidHost",
    "PlacementAnswer",
    "PlacementQuery",
    "PortRequest",
    "ProviderSummary",
    "ProviderUsage",
    "QueryError",
    "RequestSpec",
    "Schedule",
    "Scheduler",
    "SchedulerConfig",
    "SchedulerHints",
    "Selection",
    "ServerGroup",
    "StageOutcome",
    "build_query",
    "group_suffix",
    "port_allocations",
    "read_answer",
    "select_destinations",
]

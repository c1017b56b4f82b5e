"""Allocation candidates and provider filtering over an in-memory snapshot.

See ``request`` for the query parsers and how the handlers call them.
"""

from berth.placement.candidates.providers import matching_providers
from berth.placement.candidates.render import render
from berth.placement.candidates.request import (
    CandidatesRequest,
    ProviderFilters,
    RequestGroup,
    parse_candidates_request,
    parse_provider_filters,
)
from berth.placement.candidates.snapshot import Inventory, Provider, Snapshot, load_snapshot
from berth.placement.candidates.solver import AllocationRequest, Candidates, allocation_candidates

__all__ = [
    "AllocationRequest",
    "Candidates",
    "CandidatesRequest",
    "Inventory",
    "Provider",
    "ProviderFilters",
    "RequestGroup",
    "Snapshot",
    "allocation_candidates",
    "load_snapshot",
    "matching_providers",
    "parse_candidates_request",
    "parse_provider_filters",
    "render",
]

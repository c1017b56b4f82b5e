"""Allocation candidates and provider filtering over each worker's in-memory provider index.

See ``request`` for the query parsers, ``index`` for the index and ``live`` for how it is kept
current.
"""

from berth.placement.candidates.index import Inventory, Provider, ProviderHeaders, ProviderIndex
from berth.placement.candidates.providers import matching_providers
from berth.placement.candidates.render import render, render_json
from berth.placement.candidates.request import (
    CandidatesRequest,
    ProviderFilters,
    RequestGroup,
    parse_candidates_request,
    parse_provider_filters,
)
from berth.placement.candidates.solver import AllocationRequest, Candidates, allocation_candidates

__all__ = [
    "AllocationRequest",
    "Candidates",
    "CandidatesRequest",
    "Inventory",
    "Provider",
    "ProviderFilters",
    "ProviderHeaders",
    "ProviderIndex",
    "RequestGroup",
    "allocation_candidates",
    "matching_providers",
    "parse_candidates_request",
    "parse_provider_filters",
    "render",
    "render_json",
]

"""The JSON body of ``GET /allocation_candidates`` for each microversion."""

from __future__ import annotations

from typing import Any

from berth.placement.candidates.snapshot import Snapshot
from berth.placement.candidates.solver import AllocationRequest, Candidates

Version = tuple[int, int]


def _allocations_list(areq: AllocationRequest) -> dict[str, Any]:
    """Before 1.12::

    {"allocations": [{"resource_provider": {"uuid": RP}, "resources": {"VCPU": 1}}]}
    """
    return {
        "allocations": [
            {"resource_provider": {"uuid": uuid}, "resources": dict(amounts)}
            for uuid, amounts in areq.resources.items()
        ]
    }


def _allocations_dict(areq: AllocationRequest, version: Version) -> dict[str, Any]:
    """From 1.12 (``mappings`` from 1.34)::

    {"allocations": {RP: {"resources": {"VCPU": 1}}}, "mappings": {"": [RP]}}
    """
    body: dict[str, Any] = {
        "allocations": {
            uuid: {"resources": dict(amounts)} for uuid, amounts in areq.resources.items()
        }
    }
    if version >= (1, 34):
        body["mappings"] = {suffix: list(uuids) for suffix, uuids in areq.mappings.items()}
    return body


def _summary(
    snapshot: Snapshot, uuid: str, requested: frozenset[str], version: Version
) -> dict[str, Any]:
    """{"resources": {"VCPU": {"capacity": 8, "used": 0}}, "traits": [...] (1.17),
    "parent_provider_uuid": ..., "root_provider_uuid": ... (1.29)}; before 1.27 only the
    requested classes are listed."""
    p = snapshot.providers[uuid]
    body: dict[str, Any] = {
        "resources": {
            rc: {"capacity": inv.capacity, "used": inv.used}
            for rc, inv in p.inventories.items()
            if version >= (1, 27) or rc in requested
        }
    }
    if version >= (1, 17):
        body["traits"] = sorted(p.traits, key=lambda t: (snapshot.trait_rank.get(t, -1), t))
    if version >= (1, 29):
        body["parent_provider_uuid"] = p.parent_uuid
        body["root_provider_uuid"] = p.root_uuid
    return body


def render(candidates: Candidates, snapshot: Snapshot, version: Version) -> dict[str, Any]:
    if version >= (1, 12):
        areqs = [_allocations_dict(a, version) for a in candidates.allocation_requests]
    else:
        areqs = [_allocations_list(a) for a in candidates.allocation_requests]
    return {
        "allocation_requests": areqs,
        "provider_summaries": {
            uuid: _summary(snapshot, uuid, candidates.requested_classes, version)
            for uuid in candidates.summaries
        },
    }

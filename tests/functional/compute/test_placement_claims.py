"""The compute service's claims in Placement: several new consumers written in one request, all
or none."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from berth.compute.clients.placement import NewClaim
from berth.compute.service import ComputeService


def _provider(placement: httpx.Client, vcpus: int) -> str:
    rp = str(uuid.uuid4())
    assert placement.post("/resource_providers", json={"uuid": rp, "name": rp}).status_code == 200
    inventories = {"resource_provider_generation": 0, "inventories": {"VCPU": {"total": vcpus}}}
    assert placement.put(f"/resource_providers/{rp}/inventories", json=inventories).is_success
    return rp


def _claim(rp: str, vcpus: int) -> NewClaim:
    return NewClaim(str(uuid.uuid4()), {rp: {"resources": {"VCPU": vcpus}}}, "project", "user")


def _held(placement: httpx.Client, consumer: str) -> dict[str, Any]:
    return placement.get(f"/allocations/{consumer}").json()["allocations"]  # type: ignore[no-any-return]


def test_claims_together_are_all_written(
    placement: httpx.Client, compute_service: ComputeService
) -> None:
    first, second = _provider(placement, 4), _provider(placement, 4)
    claims = [_claim(first, 2), _claim(first, 2), _claim(second, 3)]
    assert compute_service.placement.claim_together(claims)
    for claim in claims:
        held = {rp: body["resources"] for rp, body in _held(placement, claim.consumer).items()}
        assert held == {rp: body["resources"] for rp, body in claim.allocations.items()}
    usages = placement.get(f"/resource_providers/{first}/usages").json()["usages"]
    assert usages == {"VCPU": 4}


def test_one_claim_over_capacity_writes_none(
    placement: httpx.Client, compute_service: ComputeService
) -> None:
    rp = _provider(placement, 4)
    claims = [_claim(rp, 2), _claim(rp, 3)]
    assert not compute_service.placement.claim_together(claims)
    assert all(_held(placement, claim.consumer) == {} for claim in claims)
    assert compute_service.placement.claim_together([])  # nothing to write

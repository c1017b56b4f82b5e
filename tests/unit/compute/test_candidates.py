"""Placement's answer as candidates, and the free capacity the summaries tell."""

from __future__ import annotations

from typing import Any

from berth.compute.scheduler.candidates import ProviderUsage, parse_candidates


def summary(root: str, traits: tuple[str, ...] = (), **resources: tuple[int, int]) -> Any:
    return {
        "resources": {rc: {"capacity": c, "used": u} for rc, (c, u) in resources.items()},
        "traits": list(traits),
        "root_provider_uuid": root,
    }


ANSWER: dict[str, Any] = {
    "allocation_requests": [
        {
            "allocations": {
                "cn1": {"resources": {"VCPU": 2, "MEMORY_MB": 512}},
                "pf1": {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 10}},
                "pool": {"resources": {"DISK_GB": 10}},
            },
            "mappings": {"": ["cn1", "pool"], "g": ["pf1"]},
        },
        {"allocations": {"cn2": {"resources": {"VCPU": 2, "MEMORY_MB": 512, "DISK_GB": 10}}}},
        # Two compute nodes in one request: not something this scheduler asked for.
        {"allocations": {"cn1": {"resources": {"VCPU": 1}}, "cn2": {"resources": {"VCPU": 1}}}},
    ],
    "provider_summaries": {
        "cn1": summary("cn1", VCPU=(8, 7), MEMORY_MB=(4096, 0)),
        "pf1": summary("cn1", NET_BW_EGR_KILOBIT_PER_SEC=(100, 0)),
        "pool": summary("pool", ("MISC_SHARES_VIA_AGGREGATE",), DISK_GB=(1000, 0)),
        "cn2": summary("cn2", VCPU=(8, 0), MEMORY_MB=(4096, 0), DISK_GB=(100, 0)),
    },
}


def test_each_candidate_belongs_to_its_compute_node() -> None:
    first, second = parse_candidates(ANSWER, "1.36")
    assert first.root == "cn1"
    assert first.host_amounts == {"VCPU": 2, "MEMORY_MB": 512, "NET_BW_EGR_KILOBIT_PER_SEC": 10}
    assert first.mappings == {"": ("cn1", "pool"), "g": ("pf1",)}
    assert first.allocation_request is ANSWER["allocation_requests"][0]
    assert first.version == "1.36"
    assert second.root == "cn2"
    assert second.host_amount("DISK_GB") == 10
    assert second.mappings == {}


def test_provider_usage_fits_and_consumes() -> None:
    first, second = parse_candidates(ANSWER, "1.36")
    usage = ProviderUsage.from_summaries(ANSWER["provider_summaries"])
    assert usage.free("cn1", "VCPU") == 1
    # Placement answered both because they fitted: until an instance of the request takes
    # from their providers, they still do (cn1's summary is not looked at).
    assert usage.fits(first) and usage.fits(second)
    usage.consume(second)
    assert usage.free("cn2", "VCPU") == 6
    assert usage.fits(first)  # nothing taken from cn1, pf1 or the pool
    for _ in range(3):
        usage.consume(second)
    assert not usage.fits(second)  # 8 VCPU taken, and DISK_GB down to 60
    # Once the pool is taken from, cn1's candidate is checked against every summary.
    usage.consume(first)
    assert not usage.fits(first)  # cn1 had one VCPU left
    assert ProviderUsage().fits(first)  # without summaries nothing is limited here

"""Weighers: raw weights, normalisation, multipliers."""

from __future__ import annotations

import pytest

from berth.compute.objects.request_spec import SOFT_AFFINITY, ServerGroup
from berth.compute.scheduler.weighers import (
    DEFAULT_WEIGHERS,
    WEIGHERS,
    BuildFailureWeigher,
    CPUWeigher,
    DiskWeigher,
    RAMWeigher,
    ServerGroupSoftAffinityWeigher,
    ServerGroupSoftAntiAffinityWeigher,
    build_weighers,
    combine,
    normalise,
)
from tests.unit.compute.factories import candidate, host, spec


def test_normalise() -> None:
    assert normalise([]) == []
    assert normalise([5, 5, 5]) == [0.0, 0.0, 0.0]
    assert normalise([10, 20, 15]) == [0.0, 1.0, 0.5]
    assert normalise([-3, -1]) == [0.0, 1.0]


def test_resources_are_weighed_free_after_the_candidate() -> None:
    h = host("h", free_vcpus=10, free_ram_mb=8192, free_disk_gb=100)
    on_host = candidate(h, {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 40})
    assert RAMWeigher().raw(h, spec(), on_host) == 8192 - 1024
    assert CPUWeigher().raw(h, spec(), on_host) == 8
    assert DiskWeigher().raw(h, spec(), on_host) == 60
    # Disk from a sharing provider leaves the host's own disk alone.
    shared = candidate(h, {"VCPU": 2, "MEMORY_MB": 1024})
    shared = type(shared)(
        shared.root,
        {**shared.allocations, "pool": {"DISK_GB": 40}},
        shared.mappings,
        shared.version,
        shared.host_amounts,
    )
    assert DiskWeigher().raw(h, spec(), shared) == 100


def test_build_failures_and_soft_group_policies() -> None:
    h = host("h1", failed_builds=3)
    assert BuildFailureWeigher().raw(h, spec(), candidate(h)) == -3
    soft = ServerGroup("g", "soft-affinity", hosts=("h1", "h1", "h2"))
    anti = ServerGroup("g", "soft-anti-affinity", hosts=("h1", "h1", "h2"))
    hard = ServerGroup("g", "affinity", hosts=("h1",))
    c = candidate(h)
    assert ServerGroupSoftAffinityWeigher().raw(h, spec(server_group=soft), c) == 2
    assert ServerGroupSoftAffinityWeigher().raw(h, spec(server_group=anti), c) == 0
    assert ServerGroupSoftAffinityWeigher().raw(h, spec(server_group=hard), c) == 0
    assert ServerGroupSoftAntiAffinityWeigher().raw(h, spec(server_group=anti), c) == -2
    assert ServerGroupSoftAntiAffinityWeigher().raw(h, spec(), c) == 0


def test_combine_normalises_each_weigher_then_multiplies_and_sums() -> None:
    a = host("a", free_ram_mb=10_000, free_vcpus=4)
    b = host("b", free_ram_mb=20_000, free_vcpus=2)
    c = host("c", free_ram_mb=15_000, free_vcpus=3)
    options = [(h, candidate(h, {"VCPU": 1, "MEMORY_MB": 1})) for h in (a, b, c)]
    weighers = build_weighers(["RAMWeigher", "CPUWeigher"], {"CPUWeigher": 2.0})
    # RAM: a 0, b 1, c 0.5; CPU (x2): a 2, b 0, c 1.
    assert combine(options, spec(), weighers) == [2.0, 1.0, 1.5]
    stack = build_weighers(["RAMWeigher"], {"RAMWeigher": -1.0})
    assert combine(options, spec(), stack) == [-0.0, -1.0, -0.5]


def test_one_build_failure_outweighs_free_capacity_by_default() -> None:
    rich = host("rich", free_ram_mb=100_000, free_vcpus=64, free_disk_gb=5000, failed_builds=1)
    poor = host("poor", free_ram_mb=4_096, free_vcpus=4, free_disk_gb=40)
    options = [(h, candidate(h)) for h in (rich, poor)]
    weights = combine(options, spec(), build_weighers(DEFAULT_WEIGHERS, {}))
    assert weights[1] > weights[0]


def test_build_weighers() -> None:
    built = build_weighers(["RAMWeigher", "BuildFailureWeigher"], {"RAMWeigher": 0.5})
    assert [(w.NAME, m) for w, m in built] == [
        ("RAMWeigher", 0.5),
        ("BuildFailureWeigher", 1_000_000.0),
    ]
    with pytest.raises(ValueError, match="Nope"):
        build_weighers(["Nope"], {})
    with pytest.raises(ValueError, match="Typo"):
        build_weighers(["RAMWeigher"], {"Typo": 1.0})
    assert all(name == cls.NAME for name, cls in WEIGHERS.items())


def test_a_weigher_the_same_for_every_host_gives_one_raw_weight_to_all() -> None:
    """What ``combine`` leaves out must be a column it would have normalised to zeros."""
    hosts = [host("a", failed_builds=2), host("b", free_ram_mb=1), host("c")]
    plain, grouped = spec(), spec(server_group=ServerGroup("g", SOFT_AFFINITY, hosts=("a",)))
    for weigher in (cls() for cls in WEIGHERS.values()):
        for request in (plain, grouped):
            if weigher.same_for_every_host(request):
                assert len({weigher.raw(h, request, candidate(h)) for h in hosts}) == 1
    assert [w.NAME for w in (c() for c in WEIGHERS.values()) if w.same_for_every_host(plain)] == [
        "ServerGroupSoftAffinityWeigher",
        "ServerGroupSoftAntiAffinityWeigher",
    ]

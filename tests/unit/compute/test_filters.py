"""Each filter's pass and reason codes, and the pipeline that runs them."""

from __future__ import annotations

from typing import Any

import pytest

from berth.compute.objects.request_spec import (
    Destination,
    Image,
    RequestSpec,
    SchedulerHints,
    ServerGroup,
)
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import (
    DEFAULT_FILTERS,
    FILTERS,
    AggregateInstanceExtraSpecsFilter,
    AvailabilityZoneFilter,
    ComputeFilter,
    DifferentHostFilter,
    HostFilter,
    ImagePropertiesFilter,
    PciPassthroughFilter,
    RequestedDestinationFilter,
    SameHostFilter,
    ServerGroupAffinityFilter,
    ServerGroupAntiAffinityFilter,
    build_pipeline,
    run_filters,
)
from berth.compute.scheduler.filters.image_properties import version_meets
from berth.compute.scheduler.filters.pci_passthrough import vf_demand
from berth.compute.scheduler.host_state import Aggregate, HostState
from tests.unit.compute.factories import candidate, flavor, host, port, spec


def check(f: HostFilter, h: HostState, s: RequestSpec, c: Candidate | None = None) -> str | None:
    reason = f.check(h, s, c or candidate(h))
    assert reason is None or reason in f.REASONS
    return reason


def test_every_filter_declares_a_name_and_reasons() -> None:
    for name, cls in FILTERS.items():
        assert name == cls.NAME
        assert cls.REASONS and all(r and r == r.lower() and " " not in r for r in cls.REASONS)
    assert set(DEFAULT_FILTERS) == set(FILTERS)


def test_requested_destination() -> None:
    f = RequestedDestinationFilter()
    h1 = host("h1")
    assert check(f, h1, spec()) is None
    assert check(f, h1, spec(ignore_hosts=frozenset({"h1"}))) == "ignored-host"
    assert check(f, h1, spec(destination=Destination(host="h2"))) == "not-requested-host"
    assert check(f, h1, spec(destination=Destination(host="h1", node="n"))) == (
        "not-requested-node"
    )
    assert check(f, h1, spec(destination=Destination(cell_uuid="cell-2"))) == ("not-requested-cell")
    assert check(f, h1, spec(destination=Destination(host="h1", cell_uuid="cell-1"))) is None


def test_compute_status() -> None:
    f = ComputeFilter()
    assert check(f, host("h"), spec()) is None
    assert check(f, host("h", disabled=True), spec()) == "disabled"
    assert check(f, host("h", up=False), spec()) == "down"


def test_availability_zone() -> None:
    f = AvailabilityZoneFilter()
    h = host("h", availability_zone="az1")
    assert check(f, h, spec()) is None
    assert check(f, h, spec(availability_zone="az1")) is None
    assert check(f, h, spec(availability_zone="nova")) == "wrong-az"


@pytest.mark.parametrize(
    ("props", "reason"),
    [
        ({}, None),
        ({"hw_architecture": "x86_64"}, None),
        ({"architecture": "amd64"}, None),  # the old name, an alias of the architecture
        ({"hw_architecture": "aarch64"}, "arch-unsupported"),
        ({"hw_architecture": "x86_64", "img_hv_type": "qemu"}, None),
        ({"img_hv_type": "xen"}, "hypervisor-type-unsupported"),
        # Each alone is supported, not together.
        ({"hw_architecture": "i686", "img_hv_type": "qemu"}, "hypervisor-type-unsupported"),
        ({"img_hv_type": "kvm", "hw_vm_mode": "hvm"}, None),
        ({"img_hv_type": "kvm", "hw_vm_mode": "xen"}, "vm-mode-unsupported"),
        ({"img_hv_requested_version": ">=8.0"}, None),
        ({"img_hv_requested_version": ">=8.1"}, "hypervisor-version-unsupported"),
        ({"img_hv_requested_version": "not a version"}, "hypervisor-version-unsupported"),
    ],
)
def test_image_properties(props: dict[str, str], reason: str | None) -> None:
    h = host(
        "h",
        supported_instances=(
            ("x86_64", "kvm", "hvm"),
            ("x86_64", "qemu", "hvm"),
            ("i686", "kvm", "hvm"),
        ),
        hypervisor_version=(8, 0, 2),
    )
    assert check(ImagePropertiesFilter(), h, spec(image=Image("i", props))) == reason


def test_image_requirements_fail_on_a_host_that_reports_nothing() -> None:
    s = spec(image=Image("i", {"hw_architecture": "x86_64"}))
    assert check(ImagePropertiesFilter(), host("h"), s) == "arch-unsupported"
    assert check(ImagePropertiesFilter(), host("h"), spec()) is None


@pytest.mark.parametrize(
    ("version", "requirement", "met"),
    [
        ((8, 0, 2), ">=8.0", True),
        ((8, 0, 2), "8.0.2", True),
        ((8, 0, 2), "==8.0", False),
        ((8, 0, 2), "<9", True),
        ((8, 0, 2), "!=8.0.2", False),
        ((8, 0), ">8.0.0", False),
        ((), ">=1", False),
    ],
)
def test_version_requirements(version: tuple[int, ...], requirement: str, met: bool) -> None:
    assert version_meets(version, requirement) is met


def test_server_group_affinity() -> None:
    f = ServerGroupAffinityFilter()
    empty = ServerGroup("g", "affinity")
    placed = ServerGroup("g", "affinity", hosts=("h1",))
    assert check(f, host("h2"), spec(server_group=empty)) is None
    assert check(f, host("h1"), spec(server_group=placed)) is None
    assert check(f, host("h2"), spec(server_group=placed)) == "not-group-host"
    soft = ServerGroup("g", "soft-affinity", hosts=("h1",))
    assert check(f, host("h2"), spec(server_group=soft)) is None


def test_server_group_anti_affinity() -> None:
    f = ServerGroupAntiAffinityFilter()
    group = ServerGroup("g", "anti-affinity", hosts=("h1",))
    assert check(f, host("h1"), spec(server_group=group)) == "host-in-group"
    assert check(f, host("h2"), spec(server_group=group)) is None
    two = ServerGroup("g", "anti-affinity", hosts=("h1",), max_server_per_host=2)
    assert check(f, host("h1"), spec(server_group=two)) is None
    full = ServerGroup("g", "anti-affinity", hosts=("h1", "h1"), max_server_per_host=2)
    assert check(f, host("h1"), spec(server_group=full)) == "host-in-group"
    soft = ServerGroup("g", "soft-anti-affinity", hosts=("h1",))
    assert check(f, host("h1"), spec(server_group=soft)) is None


def test_same_and_different_host() -> None:
    h = host("h", instances=frozenset({"vm-1", "vm-2"}))
    same, different = SameHostFilter(), DifferentHostFilter()
    assert check(same, h, spec()) is None
    assert check(same, h, spec(hints=SchedulerHints(same_host=("vm-9", "vm-2")))) is None
    assert check(same, h, spec(hints=SchedulerHints(same_host=("vm-9",)))) == ("not-with-instances")
    assert check(different, h, spec()) is None
    assert check(different, h, spec(hints=SchedulerHints(different_host=("vm-9",)))) is None
    assert check(different, h, spec(hints=SchedulerHints(different_host=("vm-1",)))) == (
        "with-instances"
    )


def test_aggregate_instance_extra_specs() -> None:
    f = AggregateInstanceExtraSpecsFilter()
    h = host(
        "h",
        aggregates=(
            Aggregate("a1", metadata={"ssd": "true", "tier": "gold, silver"}),
            Aggregate("a2", metadata={"gpu": "no"}),
        ),
    )

    def with_specs(**extra: str) -> RequestSpec:
        scoped = {f"aggregate_instance_extra_specs:{k}": v for k, v in extra.items()}
        return spec(flavor=flavor(extra_specs={**scoped, "hw:cpu_policy": "dedicated"}))

    assert check(f, h, spec()) is None
    assert check(f, h, with_specs(ssd="true", tier="silver")) is None
    assert check(f, h, with_specs(tier="bronze <or> gold")) is None
    assert check(f, h, with_specs(ssd="false")) == "metadata-mismatch"
    assert check(f, h, with_specs(numa="yes")) == "metadata-missing"
    assert check(f, host("bare"), with_specs(ssd="true")) == "metadata-missing"


# -- PCI / SR-IOV -------------------------------------------------------------------------------

BW = {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}


def sriov_host(**free: int) -> HostState:
    return host(
        "h",
        free_vfs=free,
        pf_providers={"rp-ens1": "ens1", "rp-ens2": "ens2", "rp-ens3": "ens3"},
    )


def direct(port_id: str, gid: str | None = None) -> Any:
    groups = [{"id": gid, "resources": BW, "required": []}] if gid else []
    return port(port_id, *groups, vnic_type="direct")


def bw_candidate(h: HostState, **mapped: str) -> Candidate:
    """A candidate putting each group's bandwidth (group id -> PF provider) on the host."""
    return candidate(
        h,
        extra={rp: BW for rp in mapped.values()},
        mappings={"": (h.node_uuid,), **{g: (rp,) for g, rp in mapped.items()}},
    )


def test_sriov_port_needs_a_vf_on_the_pf_holding_its_bandwidth() -> None:
    f = PciPassthroughFilter()
    s = spec(ports=(direct("p1", "g1"),))
    h = sriov_host(ens1=0, ens2=3)
    assert check(f, h, s, bw_candidate(h, g1="rp-ens1")) == "no-free-vf"
    assert check(f, h, s, bw_candidate(h, g1="rp-ens2")) is None
    assert vf_demand(h, s, bw_candidate(h, g1="rp-ens2")) == {"ens2": 1}
    # Bandwidth on a provider that is no PF of this host (an OVS bridge): no VF can follow it.
    assert check(f, h, s, bw_candidate(h, g1="rp-br-ex")) == "bandwidth-not-on-a-pf"


def test_two_sriov_ports_on_one_pf_need_two_vfs() -> None:
    f = PciPassthroughFilter()
    s = spec(ports=(direct("p1", "g1"), direct("p2", "g2")))
    h = sriov_host(ens1=1, ens2=1)
    assert check(f, h, s, bw_candidate(h, g1="rp-ens1", g2="rp-ens1")) == "no-free-vf"
    assert check(f, h, s, bw_candidate(h, g1="rp-ens1", g2="rp-ens2")) is None


def test_sriov_ports_without_bandwidth_take_vfs_where_most_are_left() -> None:
    s = spec(ports=(direct("p1", "g1"), direct("p2"), direct("p3"), port("p4")))
    h = sriov_host(ens1=2, ens2=1, ens3=1)
    c = bw_candidate(h, g1="rp-ens1")
    # ens1 keeps 1 after p1, so p2 and p3 go to ens1 (then by name) and ens2.
    assert vf_demand(h, s, c) == {"ens1": 2, "ens2": 1}
    assert check(PciPassthroughFilter(), sriov_host(ens1=1), s, c) == "no-free-vf"
    assert check(PciPassthroughFilter(), host("no-sriov"), spec(ports=(direct("p"),))) == (
        "no-free-vf"
    )
    # Normal ports need nothing.
    assert check(PciPassthroughFilter(), host("no-sriov"), spec(ports=(port("p"),))) is None


# -- the pipeline -------------------------------------------------------------------------------


def test_pipeline_order_is_the_configured_one_after_requested_destination() -> None:
    names = ["PciPassthroughFilter", "ComputeFilter"]
    assert [f.NAME for f in build_pipeline(names)] == [
        "RequestedDestinationFilter",
        "PciPassthroughFilter",
        "ComputeFilter",
    ]
    assert [f.NAME for f in build_pipeline(["ComputeFilter", "RequestedDestinationFilter"])] == [
        "RequestedDestinationFilter",
        "ComputeFilter",
    ]
    with pytest.raises(ValueError, match="NoSuchFilter"):
        build_pipeline(["ComputeFilter", "NoSuchFilter"])
    with pytest.raises(ValueError, match="twice"):
        build_pipeline(["ComputeFilter", "ComputeFilter"])


def test_run_filters_records_the_stage_that_emptied_each_host() -> None:
    hosts = [
        host("ok"),
        host("off", disabled=True),
        host("down", up=False, availability_zone="az2"),
        host("far", availability_zone="az2"),
    ]
    options = {h.node_uuid: (h, [candidate(h)]) for h in hosts}
    recorder = Recorder(hosts=4, placement_hosts=4)
    pipeline = build_pipeline(["ComputeFilter", "AvailabilityZoneFilter"])
    kept = run_filters(options, spec(availability_zone="nova"), pipeline, recorder)
    assert list(kept) == ["rp-ok"]
    result = recorder.result(available=1)
    assert result.reasons("ComputeFilter") == {"disabled": 1, "down": 1}
    assert result.reasons("AvailabilityZoneFilter") == {"wrong-az": 1}


def test_a_host_stays_while_one_of_its_candidates_passes() -> None:
    h = sriov_host(ens1=0, ens2=1)
    s = spec(ports=(direct("p1", "g1"),))
    bad, good = bw_candidate(h, g1="rp-ens1"), bw_candidate(h, g1="rp-ens2")
    recorder = Recorder(1, 1)
    kept = run_filters(
        {h.node_uuid: (h, [bad, good])}, s, (*build_pipeline([]), PciPassthroughFilter()), recorder
    )
    assert kept[h.node_uuid][1] == [good]
    assert recorder.result(1).stages == ()


def test_an_undeclared_reason_is_a_bug() -> None:
    class Sloppy(HostFilter):
        NAME = "Sloppy"
        REASONS = frozenset({"declared"})

        def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
            return "host h1 is full"

    h = host("h1")
    with pytest.raises(RuntimeError, match="undeclared"):
        run_filters({h.node_uuid: (h, [candidate(h)])}, spec(), [Sloppy()], Recorder(1, 1))


def test_a_filter_that_passes_every_host_for_a_spec_refuses_none_of_them() -> None:
    """What the pipeline skips must be what would have passed: every filter, over specs that
    ask it nothing and specs that ask it something, against hosts of every kind."""
    hosts = [
        host("plain"),
        host("off", disabled=True, up=False, availability_zone="other"),
        host(
            "busy",
            instances=frozenset({"vm-a", "vm-b"}),
            supported_instances=(("arm", "xen", "xen"),),
        ),
        host("agg", aggregates=(Aggregate("a1", "a1", {"ssd": "false"}),), free_vfs={"eth1": 0}),
    ]
    specs = [
        spec(),
        spec(ignore_hosts=("plain",)),
        spec(destination=Destination(host="agg")),
        spec(availability_zone="nova"),
        spec(flavor=flavor(extra_specs={"aggregate_instance_extra_specs:ssd": "true"})),
        spec(flavor=flavor(extra_specs={"hw:cpu_policy": "dedicated"})),
        spec(hints=SchedulerHints(same_host=("vm-a",), different_host=("vm-b",))),
        spec(server_group=ServerGroup("g", "anti-affinity", hosts=("busy",))),
        spec(server_group=ServerGroup("g", "affinity", hosts=("busy",))),
        spec(server_group=ServerGroup("g", "affinity")),
        spec(image=Image("img", {"hw_architecture": "x86_64", "img_hv_requested_version": ">=9"})),
        spec(image=Image("img", {"hw_vm_mode": " "})),
        spec(ports=(port("p1", vnic_type="direct"),)),
        spec(ports=(port("p1"),)),
    ]
    skipped = 0
    for stage in (cls() for cls in FILTERS.values()):
        for request in specs:
            if stage.passes_every_host(request):
                skipped += 1
                assert [stage.check(h, request, candidate(h)) for h in hosts] == [None] * 4, (
                    stage.NAME,
                    request,
                )
    # Each filter but ComputeFilter (which asks every host) is skipped for the plain spec.
    assert sum(s.passes_every_host(spec()) for s in (c() for c in FILTERS.values())) == 9
    assert skipped > len(FILTERS)

"""The NoValidHost diagnosis: counted as data, rendered as one line."""

from __future__ import annotations

from berth.compute.scheduler.diagnosis import Recorder


def test_render_the_example_line() -> None:
    recorder = Recorder(hosts=12, placement_hosts=12, seed=7)
    for _ in range(5):
        recorder.removed("AvailabilityZoneFilter", "wrong-az")
    for _ in range(7):
        recorder.removed("ServerGroupAntiAffinityFilter", "host-in-group")
    d = recorder.result(available=0)
    assert d.render() == (
        "0/12 hosts are available: Placement returned 12; AvailabilityZoneFilter removed 5 "
        "(wrong-az: 5); ServerGroupAntiAffinityFilter removed 7 (host-in-group: 7)"
    )
    assert str(d) == d.render()
    assert d.removed_by("AvailabilityZoneFilter") == 5
    assert d.to_json()["stages"][1] == {
        "name": "ServerGroupAntiAffinityFilter",
        "removed": 7,
        "reasons": {"host-in-group": 7},
    }
    assert d.to_json()["seed"] == 7


def test_reasons_are_counted_most_first_and_stages_keep_pipeline_order() -> None:
    recorder = Recorder(hosts=40, placement_hosts=6)
    recorder.removed("ComputeFilter", "down")
    recorder.removed("ComputeFilter", "disabled")
    recorder.removed("ComputeFilter", "disabled")
    recorder.removed("ImagePropertiesFilter", "arch-unsupported")
    assert recorder.result(3).render() == (
        "3/40 hosts are available: Placement returned 6; ComputeFilter removed 3 "
        "(disabled: 2, down: 1); ImagePropertiesFilter removed 1 (arch-unsupported: 1)"
    )


def test_an_empty_placement_answer_explained_by_the_caller() -> None:
    d = Recorder(hosts=30, placement_hosts=0).result(0)
    assert d.render() == "0/30 hosts are available: Placement returned 0"
    explained = d.with_placement_shortfall(
        {"VCPU": 12, "DISK_GB": 30, "MEMORY_MB": 0},
        {"HW_CPU_X86_AVX2": 4, "!COMPUTE_STATUS_DISABLED": 2},
    )
    assert explained.render() == (
        "0/30 hosts are available: Placement returned 0 (insufficient DISK_GB: 30, "
        "insufficient VCPU: 12, missing trait HW_CPU_X86_AVX2: 4, "
        "forbidden trait COMPUTE_STATUS_DISABLED: 2)"
    )
    assert explained.to_json()["placement_shortfall"]["resources"] == {"DISK_GB": 30, "VCPU": 12}
    assert d.shortfall_resources == ()  # the original is unchanged

"""The workload file: what it expands to, and how a wrong one is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from berth.sim import scenario, workload
from berth.sim.workload import Boot, Delete, WorkloadError

BASE: dict[str, Any] = {
    "flavors": {"small": {"vcpus": 1, "memory_mb": 512}, "big": {"vcpus": 8, "memory_mb": 1024}},
    "networks": {"public": {"physnet": "public"}},
}


def _parse(**document: Any) -> workload.Workload:
    return workload.parse({**BASE, **document})


def _plan(w: workload.Workload) -> list[tuple[float, str, str]]:
    return [
        (a.time, "boot" if isinstance(a.what, Boot) else "delete", a.what.name) for a in w.actions
    ]


def test_events_expand_in_time_order_with_lifetimes_as_deletes() -> None:
    """At one time, deletes come before boots: what they free is there for the boots."""
    w = _parse(events=[
        {"at": 0, "boot": {"name": "web", "flavor": "small", "count": 2, "lifetime": 15}},
        {"every": 10, "from": 5, "until": 25, "boot": {"flavor": "big"}},
        {"at": 12, "delete": ["big-1"]},
    ])  # fmt: skip
    assert _plan(w) == [
        (0, "boot", "web-1"), (0, "boot", "web-2"), (5, "boot", "big-1"), (12, "delete", "big-1"),
        (15, "delete", "web-1"), (15, "delete", "web-2"), (15, "boot", "big-2"),
        (25, "boot", "big-3"),
    ]  # fmt: skip
    assert w.largest_flavor().vcpus == 8


def test_random_arrivals_follow_the_seed() -> None:
    events = [{"rate": 0.5, "until": 100, "boot": {"flavor": "small"}}]
    first, again = _parse(seed=1, events=events), _parse(seed=1, events=events)
    other = _parse(seed=2, events=events)
    assert _plan(first) == _plan(again) != _plan(other)
    # About 0.5 a second for 100 seconds.
    assert 25 < len(first.actions) < 80
    assert all(isinstance(a.what, Boot) and a.time <= 100 for a in first.actions)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"events": [{"at": 0, "boot": {"flavor": "small", "networks": ["nowhere"]}}]},
         "events[0].boot.networks[0]: 'nowhere' is not one of the workload's networks"),
        ({"events": [{"at": 0, "boot": {"flavor": "small", "group": "g"}}]},
         "events[0].boot.group: 'g' is not one of the workload's server_groups"),
        ({"events": [{"at": 0, "boot": {"flavor": "small", "ports": [{"network": "public", "qos_policy": "x"}]}}]},
         "events[0].boot.ports[0].qos_policy: 'x' is not one of the workload's qos_policies"),
        ({"events": [{"at": 0, "boot": {"flavor": "small"}, "delete": ["a"]}]},
         "events[0]: an event has either boot or delete"),
        ({"events": [{"at": 0, "every": 3, "until": 9, "boot": {"flavor": "small"}}]},
         "events[0]: an event has exactly one of at, every, rate"),
        ({"events": [{"at": -1, "boot": {"flavor": "small"}}]},
         "events[0].at: "),
        ({"events": [{"at": 0, "boot": {"flavor": "small", "colour": "red"}}]},
         "events[0].boot.colour: "),
        ({"qos_policies": {"empty": {}}, "events": [{"at": 0, "boot": {"flavor": "small"}}]},
         "qos_policies.empty: a QoS policy needs min_kbps or min_kpps"),
        ({"events": []}, "events: "),
        ({"events": [{"at": 0, "delete": "small-1"}, {"at": 0, "boot": {"flavor": "small"}}]},
         "delete of 'small-1' at 0 s: no server of that name was booted before then"),
    ],
)  # fmt: skip
def test_a_wrong_workload_says_where_and_why(document: dict[str, Any], message: str) -> None:
    with pytest.raises(WorkloadError) as caught:
        _parse(**document)
    # Berth's own checks are matched whole; pydantic's by where they point (its wording is its own).
    assert str(caught.value).startswith(message)


def test_a_file_that_is_not_a_workload(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text("events: [unclosed")
    with pytest.raises(WorkloadError, match="is not YAML"):
        workload.load(tmp_path / "w.yaml")
    (tmp_path / "w.yaml").write_text("- a list")
    with pytest.raises(WorkloadError, match="a workload is a mapping"):
        workload.load(tmp_path / "w.yaml")
    with pytest.raises(WorkloadError, match="cannot read"):
        workload.load(tmp_path / "missing.yaml")


def test_the_example_workload_loads() -> None:
    w = workload.load(Path(__file__).parents[3] / "etc" / "workload.example.yaml")
    kinds = {type(a.what) for a in w.actions}
    assert kinds == {Boot, Delete}


def test_scheduler_settings_files_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"auth_strategy": "keystone"}))
    with pytest.raises(scenario.ScenarioError, match="auth_strategy not scheduler settings"):
        scenario.scheduler_settings(path)
    path.write_text(yaml.safe_dump({"weigher_multipliers": {"NoSuchWeigher": 1.0}}))
    with pytest.raises(scenario.ScenarioError, match="no weigher NoSuchWeigher"):
        scenario.scheduler_settings(path)
    path.write_text(yaml.safe_dump({"host_subset_size": 0}))
    with pytest.raises(scenario.ScenarioError, match="host_subset_size"):
        scenario.scheduler_settings(path)
    path.write_text(yaml.safe_dump({"weigher_multipliers": {"RAMWeigher": -1.0}}))
    assert scenario.scheduler_settings(path).weigher_multipliers == {"RAMWeigher": -1.0}


def test_scenarios_pair_fleets_with_settings(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        yaml.safe_dump({"hosts": [{"name": "cn", "count": 2, "driver": {"spawn_seconds": 3}}]})
    )
    spread, stack = tmp_path / "spread.yaml", tmp_path / "stack.yaml"
    spread.write_text("{}")
    stack.write_text(yaml.safe_dump({"cpu_allocation_ratio": 2.0}))
    runs = scenario.scenarios([fleet], [spread, stack])
    assert [r.name for r in runs] == ["spread", "stack"]
    assert runs[1].fleet.hosts[0].resources.cpu_allocation_ratio == 2.0
    # The simulated clock does not wait for hosts.
    assert {h.spawn_seconds for r in runs for h in r.fleet.hosts} == {0.0}
    with pytest.raises(scenario.ScenarioError, match="not both at once"):
        scenario.scenarios([fleet, fleet], [spread, stack])
    (tmp_path / "empty.yaml").write_text("cells: [cell1]")
    with pytest.raises(scenario.ScenarioError, match="no hosts"):
        scenario.scenarios([tmp_path / "empty.yaml"], [])

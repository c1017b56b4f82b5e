"""What ``heal.plan`` finds missing, without any service."""

from __future__ import annotations

from typing import Any

import pytest

from berth import cli
from berth.compute import heal
from berth.compute.heal import HealReport, PortState, merge, plan, port_query
from berth.compute.objects.request_spec import PortRequest

NODE, PF1, PF2 = "node-rp", "pf1-rp", "pf2-rp"
FLAVOR = {"VCPU": 1, "MEMORY_MB": 512}
PHYSNET1 = frozenset({"CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT"})
PHYSNET2 = frozenset({"CUSTOM_PHYSNET_PHYSNET2", "CUSTOM_VNIC_TYPE_DIRECT"})
TRAITS = {NODE: frozenset[str](), PF1: PHYSNET1, PF2: PHYSNET2}


def _port(port_id: str, physnet: str, kbps: int = 1000) -> PortRequest:
    group: dict[str, Any] = {
        "id": f"{port_id}-bw",
        "required": [f"CUSTOM_PHYSNET_{physnet}", "CUSTOM_VNIC_TYPE_DIRECT"],
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": kbps},
    }
    return PortRequest(port_id, resource_request={"request_groups": [group]})


def _held(**per_pf: int) -> dict[str, dict[str, int]]:
    held = {NODE: dict(FLAVOR)}
    for rp, kbps in per_pf.items():
        held[{"pf1": PF1, "pf2": PF2}[rp]] = {"NET_BW_EGR_KILOBIT_PER_SEC": kbps}
    return held


def test_a_whole_allocation_with_matching_profiles_needs_nothing() -> None:
    port = PortState(_port("p1", "PHYSNET1"), {"p1-bw": PF1})
    assert plan("s", NODE, FLAVOR, _held(pf1=1000), TRAITS, [port]).nothing_to_do


def test_no_allocation_at_all_asks_for_the_flavor_and_every_port() -> None:
    request = _port("p1", "PHYSNET1")
    found = plan("s", NODE, FLAVOR, {}, TRAITS, [PortState(request, {"p1-bw": PF1})])
    assert found.flavor == FLAVOR
    assert found.unallocated == (request,)
    assert not found.relabel


def test_a_stripped_port_part_is_unallocated_and_the_flavor_kept() -> None:
    request = _port("p1", "PHYSNET1")
    found = plan("s", NODE, FLAVOR, _held(), TRAITS, [PortState(request, {"p1-bw": PF1})])
    assert found.flavor is None
    assert found.unallocated == (request,)


def test_a_profile_naming_another_provider_is_relabelled_to_the_held_one() -> None:
    port = PortState(_port("p1", "PHYSNET1"), {"p1-bw": PF2})
    found = plan("s", NODE, FLAVOR, _held(pf1=1000), TRAITS, [port])
    assert found.relabel == {"p1": {"p1-bw": PF1}}
    assert not found.unallocated and found.flavor is None


def test_a_held_provider_without_the_groups_traits_does_not_serve_it() -> None:
    # The bandwidth is held on physnet2's function, but the port asks for physnet1.
    port = PortState(_port("p1", "PHYSNET1"), {"p1-bw": PF2})
    found = plan("s", NODE, FLAVOR, _held(pf2=1000), TRAITS, [port])
    assert [p.port_id for p in found.unallocated] == ["p1"]


def test_two_ports_on_one_function_need_both_amounts_held() -> None:
    ports = [
        PortState(_port("p1", "PHYSNET1"), {"p1-bw": PF1}),
        PortState(_port("p2", "PHYSNET1"), {"p2-bw": PF1}),
    ]
    found = plan("s", NODE, FLAVOR, _held(pf1=1000), TRAITS, ports)
    # p1 comes first (id order) and takes what is held; p2 is missing.
    assert [p.port_id for p in found.unallocated] == ["p2"]
    assert plan("s", NODE, FLAVOR, _held(pf1=2000), TRAITS, ports).nothing_to_do


def test_a_profile_missing_a_group_is_relabelled() -> None:
    found = plan(
        "s", NODE, FLAVOR, _held(pf1=1000), TRAITS, [PortState(_port("p1", "PHYSNET1"), {})]
    )
    assert found.relabel == {"p1": {"p1-bw": PF1}}


def test_port_query_puts_each_group_in_the_nodes_tree() -> None:
    pairs = port_query([_port("p1", "PHYSNET1"), _port("p2", "PHYSNET2")], NODE)
    trees = [value for key, value in pairs if key.startswith("in_tree")]
    assert trees == [NODE, NODE]
    assert ("group_policy", "none") in pairs
    assert pairs[-1] == ("limit", "1")


def test_merge_sums_per_provider() -> None:
    assert merge({NODE: {"VCPU": 1}}, {NODE: {"VCPU": 1}, PF1: {"X": 5}}) == {
        NODE: {"VCPU": 2},
        PF1: {"X": 5},
    }


def _cli(*extra: str) -> list[str]:
    urls = ["--placement-url", "http://p", "--network-url", "http://n"]
    return ["manage", "placement", "heal-allocations", *urls, *extra]


def test_the_command_refuses_an_instance_that_is_not_a_uuid(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(_cli("--instance", "vm1"))
    assert exited.value.code == 2
    assert "not a UUID" in capsys.readouterr().err


def test_the_command_prints_each_action_and_fails_on_a_failure(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, Any] = {}

    def fake_heal(*_clients: Any, dry_run: bool, instance: str | None) -> HealReport:
        seen.update(dry_run=dry_run, instance=instance)
        return HealReport(checked=2, profiles_fixed=1, actions=["set x"], failures=["s2: why"])

    monkeypatch.setattr(heal, "heal", fake_heal)
    monkeypatch.setattr(cli, "_api_db", lambda: None)
    server = "9b1c5d2e-0000-4000-8000-000000000001"
    assert cli.main(_cli("--dry-run", "--instance", server.upper())) == 1
    assert seen == {"dry_run": True, "instance": server}
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["would set x", "failed: s2: why"]
    assert out[2].startswith("2 servers checked") and out[2].endswith(
        "1 failures (dry run: nothing was changed)"
    )

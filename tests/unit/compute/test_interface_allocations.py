"""A server's allocation as an interface attach grows it and a detach shrinks it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from berth.compute.interface_allocations import demand, grown, shrunk

NODE, BRIDGE, PF = "node-rp", "bridge-rp", "pf-rp"
FLAVOR = {"VCPU": 2, "MEMORY_MB": 2048}
EGRESS, INGRESS = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"


def _group(gid: str, **resources: int) -> dict[str, Any]:
    return {"id": gid, "required": ["CUSTOM_PHYSNET_PUBLIC"], "resources": resources}


def test_attach_adds_each_group_on_its_provider() -> None:
    groups = [
        _group("bw", **{EGRESS: 1000, INGRESS: 500}),
        _group("pps", NET_PACKET_RATE_KILOPACKET_PER_SEC=10),
    ]
    held = {NODE: FLAVOR, BRIDGE: {EGRESS: 3000}}
    mapping = {"bw": BRIDGE, "pps": NODE}
    assert grown(held, groups, mapping) == {
        NODE: {**FLAVOR, "NET_PACKET_RATE_KILOPACKET_PER_SEC": 10},
        BRIDGE: {EGRESS: 4000, INGRESS: 500},
    }
    assert held == {NODE: FLAVOR, BRIDGE: {EGRESS: 3000}}  # not changed in place


def test_detach_takes_off_only_the_ports_part() -> None:
    groups = [_group("bw", **{EGRESS: 1000})]
    held = {NODE: FLAVOR, BRIDGE: {EGRESS: 3000}, PF: {EGRESS: 1000}}
    assert shrunk(held, groups, {"bw": PF}) == {NODE: FLAVOR, BRIDGE: {EGRESS: 3000}}
    assert shrunk(held, groups, {"bw": BRIDGE}) == {
        NODE: FLAVOR,
        BRIDGE: {EGRESS: 2000},
        PF: {EGRESS: 1000},
    }


def test_detach_of_a_part_the_allocation_lost_takes_nothing_more() -> None:
    groups = [_group("bw", **{EGRESS: 1000})]
    assert shrunk({NODE: FLAVOR}, groups, {"bw": BRIDGE}) == {NODE: FLAVOR}
    assert shrunk({NODE: FLAVOR, BRIDGE: {EGRESS: 400}}, groups, {"bw": BRIDGE}) == {NODE: FLAVOR}


def test_a_group_the_mapping_does_not_name_takes_nothing() -> None:
    groups = [_group("bw", **{EGRESS: 1000}), _group("other", **{EGRESS: 5})]
    assert demand(groups, {"bw": BRIDGE}) == {BRIDGE: {EGRESS: 1000}}
    assert demand([_group("empty")], {"empty": BRIDGE}) == {}


_PROVIDERS = st.sampled_from([NODE, BRIDGE, PF, "other-rp"])
_CLASSES = st.sampled_from([EGRESS, INGRESS, "VCPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC"])
_HELD = st.dictionaries(
    _PROVIDERS, st.dictionaries(_CLASSES, st.integers(1, 10**6), min_size=1), max_size=4
)
_GROUPS = st.lists(st.dictionaries(_CLASSES, st.integers(0, 10**6), max_size=3), max_size=3)


@given(held=_HELD, amounts=_GROUPS, providers=st.lists(_PROVIDERS, min_size=3, max_size=3))
def test_detach_after_attach_gives_back_the_allocation(
    held: dict[str, dict[str, int]], amounts: list[dict[str, int]], providers: list[str]
) -> None:
    groups = [{"id": f"g{i}", "resources": r} for i, r in enumerate(amounts)]
    mapping = {f"g{i}": providers[i] for i in range(len(groups))}
    bigger = grown(held, groups, mapping)
    assert shrunk(bigger, groups, mapping) == held
    # Nothing but the port's groups changed, and by exactly their amounts.
    added = demand(groups, mapping)
    for rp in set(bigger) | set(held):
        for rc in set(bigger.get(rp, {})) | set(held.get(rp, {})):
            difference = bigger.get(rp, {}).get(rc, 0) - held.get(rp, {}).get(rc, 0)
            assert difference == added.get(rp, {}).get(rc, 0)

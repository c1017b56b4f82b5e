"""A bound port's new request rewritten into its server's allocation, in place."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from berth.network import exceptions
from berth.network import resource_request as rr
from berth.network.allocation_change import (
    PortRequestChange,
    Reason,
    check,
    growth,
    profile_allocation,
    rewrite,
)
from berth.network.model import (
    MinimumBandwidthRule,
    MinimumPacketRateRule,
    QosRule,
    ResourceRequest,
)

PORT = "5d2f6a3e-98b1-4c8e-9d1a-0a6c2b7e4f10"
SERVER = "0b7f3c1e-2d4a-4e6b-8c9d-1f2e3a4b5c6d"
BW, PPS = rr.group_id(PORT, "bandwidth"), rr.group_id(PORT, "packet-rate")
NODE, BRIDGE, AGENT = "rp-node", "rp-bridge", "rp-agent"
EGR, IGR = "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC"
KPPS = "NET_PACKET_RATE_KILOPACKET_PER_SEC"
FLAVOR = {"VCPU": 2, "MEMORY_MB": 2048}


def _of(*rules: QosRule) -> ResourceRequest | None:
    return rr.resource_request(PORT, "normal", rules, ["public"])


def _change(
    old: ResourceRequest | None, new: ResourceRequest | None, consumer: str = SERVER
) -> PortRequestChange:
    return PortRequestChange(PORT, consumer, old, new, {BW: BRIDGE, PPS: AGENT})


def _reason(caught: pytest.ExceptionInfo[exceptions.QosPolicyChangeRefused]) -> str:
    assert caught.value.status == 409
    return str(caught.value).split(":", 1)[0]


def test_a_bigger_minimum_grows_the_amount_on_the_same_provider() -> None:
    held = {NODE: FLAVOR, BRIDGE: {EGR: 1000}}
    change = _change(
        _of(MinimumBandwidthRule("egress", 1000)), _of(MinimumBandwidthRule("egress", 3000))
    )
    updated = rewrite(held, [change])
    assert updated == {NODE: FLAVOR, BRIDGE: {EGR: 3000}}
    assert growth(held, updated) == [(BRIDGE, EGR, 2000)]
    assert profile_allocation(change) == {BW: BRIDGE}


def test_other_consumers_resources_on_the_provider_are_kept() -> None:
    # Two ports of one server on one bridge: only this port's part changes.
    held = {NODE: FLAVOR, BRIDGE: {EGR: 1500, IGR: 700}}
    change = _change(
        _of(MinimumBandwidthRule("egress", 1000)), _of(MinimumBandwidthRule("egress", 200))
    )
    assert rewrite(held, [change]) == {NODE: FLAVOR, BRIDGE: {EGR: 700, IGR: 700}}


def test_a_new_direction_in_the_same_group_lands_on_the_same_provider() -> None:
    held = {NODE: FLAVOR, BRIDGE: {EGR: 1000}}
    new = _of(MinimumBandwidthRule("egress", 1000), MinimumBandwidthRule("ingress", 400))
    assert rewrite(held, [_change(_of(MinimumBandwidthRule("egress", 1000)), new)]) == {
        NODE: FLAVOR,
        BRIDGE: {EGR: 1000, IGR: 400},
    }


def test_removing_every_minimum_drops_the_ports_part_and_the_profile_key() -> None:
    held = {NODE: FLAVOR, BRIDGE: {EGR: 1000}, AGENT: {KPPS: 10}}
    old = _of(MinimumBandwidthRule("egress", 1000), MinimumPacketRateRule("any", 10))
    change = _change(old, None)
    check(change)
    assert rewrite(held, [change]) == {NODE: FLAVOR}
    assert profile_allocation(change) is None


def test_a_group_that_goes_leaves_the_profile() -> None:
    old = _of(MinimumBandwidthRule("egress", 1000), MinimumPacketRateRule("any", 10))
    change = _change(old, _of(MinimumBandwidthRule("egress", 1000)))
    assert rewrite({NODE: FLAVOR, BRIDGE: {EGR: 1000}, AGENT: {KPPS: 10}}, [change]) == {
        NODE: FLAVOR,
        BRIDGE: {EGR: 1000},
    }
    assert profile_allocation(change) == {BW: BRIDGE}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_change(None, _of(MinimumBandwidthRule("egress", 1))), Reason.NO_ALLOCATION),
        (
            _change(
                _of(MinimumBandwidthRule("egress", 1)),
                _of(MinimumBandwidthRule("egress", 1), MinimumPacketRateRule("any", 1)),
            ),
            Reason.NEW_GROUP,
        ),
        (
            PortRequestChange(PORT, SERVER, _of(MinimumBandwidthRule("egress", 1)), None, {}),
            Reason.NOT_IN_PROFILE,
        ),
        (
            _change(_of(MinimumBandwidthRule("egress", 1)), None, consumer=""),
            Reason.NO_CONSUMER,
        ),
    ],
)
def test_changes_the_allocation_cannot_follow_in_place_are_refused(
    change: PortRequestChange, reason: Reason
) -> None:
    with pytest.raises(exceptions.QosPolicyChangeRefused) as caught:
        check(change)
    assert _reason(caught) == reason.value
    assert PORT in str(caught.value)


def test_an_allocation_that_lacks_the_old_request_is_refused() -> None:
    change = _change(
        _of(MinimumBandwidthRule("egress", 1000)), _of(MinimumBandwidthRule("egress", 2000))
    )
    with pytest.raises(exceptions.QosPolicyChangeRefused) as caught:
        rewrite({NODE: FLAVOR, BRIDGE: {EGR: 500}}, [change])
    assert _reason(caught) == Reason.NOT_HELD.value


# -- properties -----------------------------------------------------------------------------------

_kbps = st.integers(min_value=0, max_value=10_000)


@st.composite
def _requests(draw: st.DrawFn) -> ResourceRequest | None:
    return _of(
        MinimumBandwidthRule("egress", draw(_kbps)),
        MinimumBandwidthRule("ingress", draw(_kbps)),
        MinimumPacketRateRule("any", draw(_kbps)),
    )


def _totals(allocation: dict[str, dict[str, int]]) -> Counter[str]:
    found: Counter[str] = Counter()
    for resources in allocation.values():
        found.update(resources)
    return found


def _asked(request: ResourceRequest | None) -> Counter[str]:
    found: Counter[str] = Counter()
    for group in request.request_groups if request is not None else ():
        found.update(group.resources)
    return found


@given(_requests(), _requests(), st.integers(min_value=0, max_value=5000))
def test_totals_move_by_exactly_the_difference_and_nothing_else_moves(
    old: ResourceRequest | None, new: ResourceRequest | None, others: int
) -> None:
    # The server's allocation: its flavor, its port's old request, and another port's part.
    held: dict[str, dict[str, int]] = {NODE: dict(FLAVOR), BRIDGE: {}, AGENT: {}}
    if others:
        held[BRIDGE][EGR] = others
    for group in old.request_groups if old is not None else ():
        target = held[BRIDGE if group.id == BW else AGENT]
        for rc, amount in group.resources.items():
            target[rc] = target.get(rc, 0) + amount
    held = {rp: resources for rp, resources in held.items() if resources}
    change = _change(old, new)
    try:
        check(change)
    except exceptions.QosPolicyChangeRefused:
        old_groups = {g.id for g in old.request_groups} if old is not None else set()
        new_groups = {g.id for g in new.request_groups} if new is not None else set()
        assert not new_groups <= old_groups
        return
    updated = rewrite(held, [change])
    assert _totals(updated) == _totals(held) - _asked(old) + _asked(new)
    assert updated[NODE] == FLAVOR
    assert all(amount > 0 for resources in updated.values() for amount in resources.values())
    # Undoing the change gives the allocation back.
    assert rewrite(updated, [change.reversed()]) == held
    assert {rp for rp, _, _ in growth(held, updated)} <= {BRIDGE, AGENT}

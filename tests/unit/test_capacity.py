"""The one fit function, checked against its definition on random inventories."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from berth.placement import capacity
from berth.placement.capacity import Inventory, Refusal

inventories = st.builds(
    Inventory,
    total=st.integers(1, 1000),
    reserved=st.integers(0, 1000),
    min_unit=st.integers(1, 10),
    max_unit=st.integers(1, 1000),
    step_size=st.integers(1, 10),
    allocation_ratio=st.sampled_from([0.5, 1.0, 1.5, 16.0]),
)


@given(inventories, st.integers(1, 2000), st.integers(0, 3000), st.integers(0, 3000))
def test_fit_follows_its_definition(
    inventory: Inventory, amount: int, used_after: int, used_before: int
) -> None:
    refusal = capacity.fit(inventory, amount, used_after, used_before)
    units_ok = (
        inventory.min_unit <= amount <= inventory.max_unit and amount % inventory.step_size == 0
    )
    limit = (inventory.total - inventory.reserved) * inventory.allocation_ratio
    if not units_ok:
        assert refusal is Refusal.UNITS
    elif used_after > limit and used_after > used_before:
        assert refusal is Refusal.CAPACITY
    else:
        assert refusal is None


def test_capacity_truncates_like_upstream() -> None:
    assert Inventory(total=10, reserved=3, allocation_ratio=1.5).capacity == 10
    assert Inventory(total=4, reserved=4).capacity == 0


def test_overused_provider_may_keep_or_lower_usage_but_not_raise_it() -> None:
    shrunk = Inventory(total=2)
    assert capacity.fit(shrunk, 1, used_after=4, used_before=5) is None
    assert capacity.fit(shrunk, 1, used_after=5, used_before=5) is None
    assert capacity.fit(shrunk, 1, used_after=6, used_before=5) is Refusal.CAPACITY


def test_reserved_may_equal_total_only_from_1_26() -> None:
    full = Inventory(total=4, reserved=4)
    assert not capacity.valid_capacity(full, reserved_may_equal_total=False)
    assert capacity.valid_capacity(full, reserved_may_equal_total=True)
    assert not capacity.valid_capacity(Inventory(total=4, reserved=5), True)

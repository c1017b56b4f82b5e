"""``http_date`` writes what ``email.utils.format_datetime`` writes for a UTC time."""

from __future__ import annotations

import datetime as dt
import random
from email.utils import format_datetime

from berth.common.timeutils import http_date


def test_http_date_matches_the_standard_library() -> None:
    rng = random.Random(17)
    start = dt.datetime(1970, 1, 1)
    for _ in range(2000):
        when = start + dt.timedelta(seconds=rng.randrange(0, 5_000_000_000))
        assert http_date(when) == format_datetime(when.replace(tzinfo=dt.UTC), usegmt=True)
    assert http_date(dt.datetime(2026, 2, 1, 3, 4, 5)) == "Sun, 01 Feb 2026 03:04:05 GMT"

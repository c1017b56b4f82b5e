"""Opt-in queueing: a server that finds no host may wait for room instead of going to ERROR.

Asked for per server with the scheduler hint ``queue_timeout`` or per flavor with the extra spec
``berth:queue_timeout``, in seconds (the hint wins; ``0`` asks not to wait). The value is
checked where it is given: the create's hints, the flavor's extra specs.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from berth.compute import exceptions
from berth.compute.objects.request_spec import RequestSpec

__all__ = [
    "MAX_QUEUE_TIMEOUT",
    "QUEUE_TIMEOUT_HINT",
    "QUEUE_TIMEOUT_SPEC",
    "parse_hint",
    "queue_timeout",
    "timeout_problem",
]

QUEUE_TIMEOUT_SPEC: Final = "berth:queue_timeout"
QUEUE_TIMEOUT_HINT: Final = "queue_timeout"
# A week: a server waiting longer is better asked for again.
MAX_QUEUE_TIMEOUT: Final = 7 * 24 * 3600


def timeout_problem(value: str) -> str | None:
    """What is wrong with a timeout given as text (an extra spec), or None."""
    if not value.isascii() or not value.isdigit() or int(value) > MAX_QUEUE_TIMEOUT:
        return f"the timeout is a whole number of seconds from 0 to {MAX_QUEUE_TIMEOUT}"
    return None


def parse_hint(value: Any) -> int | None:
    """The ``queue_timeout`` hint: an integer, or a string of digits (``--hint`` sends text)."""
    if value is None:
        return None
    text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
    problem = timeout_problem(text) if isinstance(text, str) else "an integer is expected"
    if problem is not None:
        raise exceptions.BadRequest(
            f"Invalid input for 'os:scheduler_hints/{QUEUE_TIMEOUT_HINT}': {problem}."
        )
    return int(text)


def queue_timeout(spec: RequestSpec) -> dt.timedelta | None:
    """How long the spec's servers may wait for room; None when they may not."""
    seconds = spec.hints.queue_timeout
    if seconds is None:
        text = spec.flavor.extra_specs.get(QUEUE_TIMEOUT_SPEC)
        seconds = int(text) if text is not None and timeout_problem(text) is None else 0
    return dt.timedelta(seconds=seconds) if seconds > 0 else None

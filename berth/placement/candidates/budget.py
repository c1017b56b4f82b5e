"""How much work one allocation candidates search may do before it is stopped.

A query the index can answer in milliseconds and one that would search every combination of
options on every tree look alike until the search runs: five granular groups over hosts with
a few devices each have hundreds of combinations per host, and checks met only by complete
answers (``same_subtree``, traits of the unnamed group) may throw all of them out. The search
therefore runs against a budget of processor time of its own thread (what other requests take
meanwhile does not count against it) and is stopped with ``SearchTooCostly``, a 400 that says
why, when it passes it; the worker is free again at once. The ceiling on the answers
(``max_allocation_candidates``) bounds the memory of what a search keeps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from berth.placement.exceptions import InvalidInput

# The hot loops count their steps and look at the clock once per this many (a power of two, so
# that ``steps & CHECK_MASK`` tells when).
CHECK_EVERY = 1024
CHECK_MASK = CHECK_EVERY - 1
# The most combinations of options listed as one table when there is no limit (a row costs the
# search 8 bytes per slot, and the answer made of it about 5 KB): past it the query is refused
# rather than made into answers no worker has the memory for.
MAX_LISTED = 100_000


class SearchTooCostly(InvalidInput):
    """The search for allocation candidates passed its budget (400)."""


_ADVICE = (
    "ask for fewer candidates (limit), fewer or narrower request groups, or filter with "
    "member_of, in_tree or required traits"
)


class Budget:
    """The processor time a search may take, from when the budget is made."""

    def __init__(
        self, seconds: float | None, clock: Callable[[], float] = time.thread_time
    ) -> None:
        self.seconds = seconds
        self._clock = clock
        self._deadline = clock() + seconds if seconds is not None else math.inf

    def check(self) -> None:
        """Raise ``SearchTooCostly`` once the time is spent."""
        if self._clock() > self._deadline:
            raise SearchTooCostly(
                f"The allocation candidates query was stopped after {self.seconds:g} s of "
                f"search, its work budget (placement.allocation_candidates_budget); {_ADVICE}."
            )

    @staticmethod
    def check_listed(combinations: int) -> None:
        """Refuse to list more than ``MAX_LISTED`` combinations at once (a query without a limit,
        where the deployment set no ceiling)."""
        if combinations > MAX_LISTED:
            raise SearchTooCostly(
                f"The allocation candidates query has {combinations} combinations to list, more "
                f"than the {MAX_LISTED} one query may; {_ADVICE}."
            )


# No budget: what the solver's callers outside the API (tests, the reference checks) use.
UNLIMITED = Budget(None)

"""What a service's start made, kept out of the garbage collector's way.

A started service holds a great many objects for as long as it runs (every module, a fleet's
agents, Placement's candidate index, the scheduler's host cache). The collector's full passes
walk them all again and again under load, for nothing: with a thousand hosts, full collections
were a sixth of the scheduler's CPU (docs/performance.md, sixth round). Once started, a service
collects once and freezes what is left into the permanent generation; what it makes from then
on is collected as before, only less often.
"""

from __future__ import annotations

import gc

# The collector's thresholds once a service runs: a young collection per 50,000 allocations
# (the interpreter's default is 700), an older one per 20 of those, a full one per 10 older.
# A scheduling pass alone makes tens of thousands of objects (Placement's answer read), and
# freeing them is the reference counts' work: at the default, boots spent 8 % of their CPU in
# the collector, 0.4 s of the same work at these (docs/performance.md, seventh round). Cycles
# are still found, later.
RUNNING_THRESHOLDS = (50_000, 20, 10)
_DEFAULT_THRESHOLDS = gc.get_threshold()


def freeze() -> None:
    """Collect the start's garbage once, then leave every object alive now to the reference
    counts alone (cycles among them are never collected: call ``thaw`` before dropping them),
    and collect what comes after less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*RUNNING_THRESHOLDS)


def thaw() -> None:
    """Hand the frozen objects back to the collector at its usual pace (a process that starts
    and stops services repeatedly, as the tests do, frees each one's cycles)."""
    gc.set_threshold(*_DEFAULT_THRESHOLDS)
    gc.unfreeze()

"""What a service's start made, kept out of the garbage collector's way.

A started service holds a great many objects for as long as it runs (every module, a fleet's
agents, Placement's candidate index, the scheduler's host cache). The collector's full passes
walk them all again and again under load, for nothing: with a thousand hosts, full collections
were a sixth of the scheduler's CPU (docs/performance.md, sixth round). Once started, a service
collects once and freezes what is left into the permanent generation; what it makes from then
on is collected as before.
"""

from __future__ import annotations

import gc


def freeze() -> None:
    """Collect the start's garbage once, then leave every object alive now to the reference
    counts alone (cycles among them are never collected: call ``thaw`` before dropping them)."""
    gc.collect()
    gc.freeze()


def thaw() -> None:
    """Hand the frozen objects back to the collector (a process that starts and stops services
    repeatedly, as the tests do, frees each one's cycles)."""
    gc.unfreeze()

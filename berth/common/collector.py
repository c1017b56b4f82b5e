"""Pausing Python's cyclic garbage collector around work that builds a large, acyclic answer."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused() -> Iterator[None]:
    """Keep the cyclic collector from running inside the block.

    An answer of thousands of candidates is millions of small objects that all live until it is
    serialised; each collection would walk them again (it doubled the time of large answers). They
    hold no cycles, so reference counting frees them, and when they are gone before the block
    ends, the collector has nothing left to do. Other threads' collections wait for the block too.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

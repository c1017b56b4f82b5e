"""Queries that queue behind a refresh share the next one, and never one that began before them."""

from __future__ import annotations

import threading
import time

import pytest

from berth.placement.candidates.live import LiveIndex


class _CountingIndex(LiveIndex):
    """A LiveIndex whose refresh only counts, and blocks while ``gate`` is closed."""

    def __init__(self) -> None:
        super().__init__(db=None)  # type: ignore[arg-type]
        self.gate = threading.Event()
        self.refreshes = 0
        self.started = threading.Event()

    def _refresh_once(self) -> None:
        self.refreshes += 1
        self._index = object()  # type: ignore[assignment]
        self.started.set()
        self.gate.wait(5)


def _query(live: LiveIndex) -> None:
    with live.current() as index:
        assert index is not None


@pytest.mark.parametrize("queued", [1, 3])
def test_queries_arriving_during_a_refresh_share_the_next_one(queued: int) -> None:
    live = _CountingIndex()
    first = threading.Thread(target=_query, args=(live,))
    first.start()
    assert live.started.wait(5)
    # These arrive while refresh 1 runs: it began before them, so it cannot answer them.
    waiting = [threading.Thread(target=_query, args=(live,)) for _ in range(queued)]
    for thread in waiting:
        thread.start()
    # Time for them to reach the index lock (they only read a counter on the way).
    time.sleep(0.3)
    live.gate.set()
    for thread in [first, *waiting]:
        thread.join(5)
    # One waiter: it must not take refresh 1 as its own. Three: they share refresh 2.
    assert live.refreshes == 2


def test_a_query_alone_always_refreshes() -> None:
    live = _CountingIndex()
    live.gate.set()
    for _ in range(3):
        _query(live)
    assert live.refreshes == 3

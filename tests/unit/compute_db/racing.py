"""Running the same store call from several threads at once, each on its own connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def race(count: int, work: Callable[[int], T]) -> list[T]:
    """``work(0)`` ... ``work(count - 1)`` in as many threads, released together; their results."""
    barrier = threading.Barrier(count)

    def run(n: int) -> T:
        barrier.wait(timeout=30)
        return work(n)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))

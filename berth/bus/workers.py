"""Up to N daemon threads running submitted work in the order it was submitted.

A RabbitMQ server's ``concurrency``: each served topic has a pool of its own, so a slow topic
fills only its own threads. Threads start as work needs them (a process serving a thousand
topics that rarely hear anything keeps few) and are daemons, for the reason ``threads`` gives.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

LOG = logging.getLogger(__name__)

Work = Callable[[], None]


class Workers:
    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._queue: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        # Threads waiting for work that no submit has claimed yet.
        self._idle = 0
        self._closed = False

    def submit(self, work: Work) -> None:
        """Run ``work`` in a free thread, or queue it until one is free; never blocks."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"workers {self._name!r} are shut down")
            self._queue.put(work)
            # Each submit claims an idle thread or starts one: counting idle threads when they
            # take work instead would let two quick submits both count the same thread.
            if self._idle > 0:
                self._idle -= 1
            elif len(self._threads) < self._size:
                thread = threading.Thread(
                    target=self._run, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                self._threads.append(thread)
                thread.start()

    def shutdown(self) -> None:
        """Take no more work, and return once everything submitted has run."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join()

    def _run(self) -> None:
        while (work := self._queue.get()) is not None:
            try:
                work()
            except Exception:
                # A thread that died here would shrink the pool for good.
                LOG.exception("workers %r: work failed", self._name)
            with self._lock:
                self._idle += 1

"""A blocking face of a bus, for code running in threads other than the bus's event loop.

The HTTP layer runs handlers in worker threads, and so does a bus server for its plain methods;
they cast and call through a ``BusClient``, which hands the work to the loop and waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from berth.bus.errors import BusClosed
from berth.bus.interface import Bus

T = TypeVar("T")


class BusClient:
    """``bus`` as plain blocking methods, for any thread but its loop's.

    Build it on the loop (``BusClient(bus)``), or anywhere with the loop given.
    """

    def __init__(self, bus: Bus, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.bus = bus
        self.loop = loop if loop is not None else asyncio.get_running_loop()

    def cast(self, topic: str, method: str, /, **kwargs: Any) -> None:
        """``Bus.cast``: returns once the message is queued."""
        self._run(self.bus.cast(topic, method, **kwargs))

    def fanout(self, topic: str, method: str, /, **kwargs: Any) -> None:
        """``Bus.fanout``: returns once every server's copy is queued."""
        self._run(self.bus.fanout(topic, method, **kwargs))

    def call(self, topic: str, method: str, /, timeout: float | None = None, **kwargs: Any) -> Any:
        """``Bus.call``: blocks this thread until the reply, or the call's timeout."""
        return self._run(self.bus.call(topic, method, timeout=timeout, **kwargs))

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            work.close()
            # Blocking here would stop the very loop that has to do the work: a deadlock.
            raise RuntimeError("a BusClient cannot be used on its bus's event loop; await the bus")
        try:
            future = asyncio.run_coroutine_threadsafe(work, self.loop)
        except RuntimeError:
            work.close()
            raise BusClosed("the bus's event loop is closed") from None
        return future.result()

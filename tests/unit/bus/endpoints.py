"""Endpoints the bus tests serve, and a log to wait on without sleeping."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from berth.bus import Bus, BusClient

# Long enough never to fire on a working bus; it only turns a hang into a failure.
PATIENCE = 10.0


class FlavorNotFound(Exception):
    pass


class Log:
    """What happened, in order; ``reach(n)`` waits until there are ``n`` entries."""

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self._waiting: list[tuple[int, asyncio.Event]] = []

    def add(self, entry: Any) -> None:
        self.entries.append(entry)
        for count, event in self._waiting:
            if len(self.entries) >= count:
                event.set()

    async def reach(self, count: int) -> None:
        event = asyncio.Event()
        if len(self.entries) >= count:
            return
        self._waiting.append((count, event))
        async with asyncio.timeout(PATIENCE):
            await event.wait()


class Recorder:
    def __init__(self, name: str = "recorder") -> None:
        self.name = name
        self.received = Log()
        # A public attribute that is not a method: not callable over the bus.
        self.not_a_method = "data"

    async def note(self, **kwargs: Any) -> None:
        self.received.add(kwargs)

    async def note_after(self, n: int, turns: int) -> None:
        # Yields ``turns`` times first: handlers run side by side would record out of order.
        for _ in range(turns):
            await asyncio.sleep(0)
        self.received.add(n)

    async def echo(self, **kwargs: Any) -> Any:
        return kwargs

    async def whoami(self) -> str:
        return self.name

    async def fail(self, flavor: str) -> None:
        raise FlavorNotFound(f"flavor {flavor} not found")

    async def bad_reply(self) -> Any:
        return {1, 2}

    def thread_of(self) -> int:
        return threading.get_ident()

    def _private(self) -> str:
        return "secret"


class Gate:
    """A handler that waits for ``opened`` before it finishes, to hold work in flight."""

    def __init__(self, opened: asyncio.Event | None = None) -> None:
        self.opened = opened if opened is not None else asyncio.Event()
        self.started = Log()
        self.finished = Log()

    async def hold(self, item: Any) -> Any:
        self.started.add(item)
        await self.opened.wait()
        self.finished.add(item)
        return item


class Relay:
    """Passes work on to another topic, as a conductor passes a build on to a compute host."""

    def __init__(self, bus: Bus, to: str, opened: asyncio.Event | None = None) -> None:
        self.bus = bus
        self.to = to
        self.opened = opened if opened is not None else asyncio.Event()
        self.started = Log()

    async def forward(self, item: Any) -> None:
        self.started.add(item)
        await self.opened.wait()
        await self.bus.cast(self.to, "note", item=item)

    async def ask(self, flavor: str) -> Any:
        return await self.bus.call(self.to, "fail", flavor=flavor)


class ThreadedRelay:
    """The same from a plain method, in a worker thread, through a ``BusClient``."""

    def __init__(self, client: BusClient, to: str) -> None:
        self.client = client
        self.to = to

    def forward(self, item: Any) -> Any:
        return self.client.call(self.to, "echo", item=item)

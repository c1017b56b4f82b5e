"""The buses of one process, by URL: what a service asks for a cell's bus.

The same ``memory://<name>`` always gives the same in-process bus, so the components of an
all-in-one process that are configured alike find each other, and separate cells stay separate.
"""

from __future__ import annotations

import asyncio

from berth.bus.errors import BusUnavailable
from berth.bus.interface import Bus
from berth.bus.memory import InMemoryBus
from berth.bus.url import BusURL, MemoryURL, RabbitURL, parse_bus_url


class Buses:
    def __init__(self) -> None:
        self._memory: dict[str, InMemoryBus] = {}

    def connect(self, url: str | BusURL) -> Bus:
        """The bus at ``url``; ValueError if it is malformed, ``BusUnavailable`` if unusable."""
        where = parse_bus_url(url) if isinstance(url, str) else url
        match where:
            case MemoryURL(name=name):
                bus = self._memory.get(name)
                if bus is None:
                    bus = self._memory[name] = InMemoryBus(name)
                return bus
            case RabbitURL():
                raise BusUnavailable(f"{where}: the RabbitMQ backend is not built yet")

    async def close(self) -> None:
        """Close every bus this gave out."""
        await asyncio.gather(*(bus.close() for bus in self._memory.values()))

"""The buses of one process, by URL: what a service asks for a cell's bus.

The same URL always gives the same bus: the components of an all-in-one process configured with
one ``memory://<name>`` find each other, separate cells stay separate, and a process opens one
set of broker connections per ``rabbit://`` URL however many of its components use it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from berth.bus.interface import Bus
from berth.bus.memory import InMemoryBus
from berth.bus.url import BusURL, MemoryURL, RabbitURL, parse_bus_url

if TYPE_CHECKING:
    from berth.bus.rabbit import RabbitBus


class Buses:
    def __init__(self) -> None:
        self._memory: dict[str, InMemoryBus] = {}
        self._rabbit: dict[RabbitURL, RabbitBus] = {}

    def connect(self, url: str | BusURL) -> Bus:
        """The bus at ``url``; ValueError if it is malformed.

        A RabbitMQ bus connects when first used, not here.
        """
        where = parse_bus_url(url) if isinstance(url, str) else url
        match where:
            case MemoryURL(name=name):
                memory = self._memory.get(name)
                if memory is None:
                    memory = self._memory[name] = InMemoryBus(name)
                return memory
            case RabbitURL():
                rabbit = self._rabbit.get(where)
                if rabbit is None:
                    # Imported here: oslo.messaging takes half a second to import, and only a
                    # process with a broker needs it.
                    from berth.bus.rabbit import RabbitBus

                    rabbit = self._rabbit[where] = RabbitBus(where)
                return rabbit

    async def close(self) -> None:
        """Close every bus this gave out."""
        buses: list[Bus] = [*self._memory.values(), *self._rabbit.values()]
        await asyncio.gather(*(bus.close() for bus in buses))

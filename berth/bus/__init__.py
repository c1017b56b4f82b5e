"""The compute service's message bus: ``cast`` and ``call`` to topics, whatever carries them.

Write against ``Bus``; get one from ``Buses.connect(url)`` (or make an ``InMemoryBus``); from a
thread other than the bus's event loop, go through a ``BusClient``.
"""

from __future__ import annotations

from berth.bus.client import BusClient
from berth.bus.connect import Buses
from berth.bus.errors import (
    BusClosed,
    BusError,
    BusUnavailable,
    CallTimeout,
    NoServer,
    NoSuchMethod,
    RemoteError,
)
from berth.bus.interface import Bus, Server
from berth.bus.memory import InMemoryBus, InMemoryServer
from berth.bus.url import BusURL, MemoryURL, RabbitURL, parse_bus_url

__all__ = [
    "Bus",
    "BusClient",
    "BusClosed",
    "BusError",
    "BusURL",
    "BusUnavailable",
    "Buses",
    "CallTimeout",
    "InMemoryBus",
    "InMemoryServer",
    "MemoryURL",
    "NoServer",
    "NoSuchMethod",
    "RabbitURL",
    "RemoteError",
    "Server",
    "parse_bus_url",
]

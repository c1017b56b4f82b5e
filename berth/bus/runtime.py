"""The buses of one process, for code that runs in threads: an event loop of their own, clients
by URL, servers started and stopped from any thread.

Every compute process (``berth up``, or one ``berth serve`` service) has one. HTTP handlers and
bus endpoints run in worker threads and reach the buses through ``BusClient``s built here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from berth.bus.client import BusClient
from berth.bus.connect import Buses
from berth.bus.interface import Bus, Server

T = TypeVar("T")
LOG = logging.getLogger(__name__)

# Bus endpoints run in these threads and block on calls to other endpoints (a conductor waits for
# the scheduler): too few threads and they all wait for each other.
ENDPOINT_THREADS = 64


class BusRuntime:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.set_default_executor(
            ThreadPoolExecutor(ENDPOINT_THREADS, thread_name_prefix="bus")
        )
        self._thread = threading.Thread(target=self._loop.run_forever, name="bus-loop", daemon=True)
        self._thread.start()
        self._buses = Buses()
        self._clients: dict[str, BusClient] = {}
        self._servers: list[Server] = []
        self._lock = threading.Lock()

    def client(self, url: str) -> BusClient:
        """The blocking face of the bus at ``url`` (connected on first use, then kept)."""
        with self._lock:
            found = self._clients.get(url)
        if found is None:
            bus = self._run(self._connect(url))
            with self._lock:
                found = self._clients.setdefault(url, BusClient(bus, self._loop))
        return found

    def serve(self, url: str, topic: str, endpoint: object, concurrency: int) -> None:
        """Serve ``topic`` on the bus at ``url`` with ``endpoint``'s public methods."""

        async def serve() -> Server:
            server = self._buses.connect(url).serve(topic, endpoint, concurrency=concurrency)
            # Returns once the topic is consumed: a caller may then announce that it serves it
            # (a host registers), and what is sent to it from then on finds a server.
            await server.ready()
            return server

        server = self._run(serve())
        with self._lock:
            self._servers.append(server)

    def stop_serving(self, grace: float) -> None:
        """Take no new messages; wait up to ``grace`` seconds for the ones being served."""
        with self._lock:
            servers, self._servers = self._servers, []

        async def stop() -> None:
            await asyncio.wait_for(
                asyncio.gather(*(server.stop() for server in servers)), timeout=grace
            )

        if servers:
            try:
                self._run(stop())
            except TimeoutError:
                # What is still running is abandoned with the process; the conductors' recovery
                # ends such builds (docs/compute.md, "Builds that stop half way").
                LOG.warning("stopped with work in flight after a %g s grace period", grace)

    def close(self) -> None:
        """Close every bus and stop the loop."""
        if not self._thread.is_alive():
            return
        self._run(self._buses.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    async def _connect(self, url: str) -> Bus:
        return self._buses.connect(url)

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

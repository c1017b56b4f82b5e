"""The in-process bus: one asyncio event loop, a queue per topic, worker tasks per server.

For the all-in-one mode and for tests. It keeps the promises of a broker-backed bus and no more:
messages are JSON text (see ``message``), casts wait in their topic's queue for a server, servers
of one topic compete for its messages, and each server has an inbox of its own for fan-outs.
Everything happens on the loop that first used the bus; other threads reach it through a
``BusClient``.
"""

from __future__ import annotations

import asyncio
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from berth.bus.dispatch import handle
from berth.bus.errors import BusClosed, CallTimeout, NoServer
from berth.bus.fairqueue import FairQueue, first_of
from berth.bus.message import check_topic, decode_reply, encode_request

LOG = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CLOSE_TIMEOUT = 10.0

# The bus whose handler is running in this context (a worker task, the threads and tasks it starts).
# A closing bus still takes their messages, so work in flight can finish what it started.
_SERVING: ContextVar[InMemoryBus | None] = ContextVar("berth_bus_serving", default=None)


@dataclass(eq=False)
class _Message:
    body: str
    # Where a call's reply goes; None for a cast. Cancelled once the caller gives up.
    reply: asyncio.Future[str] | None = None


class _Topic:
    def __init__(self, name: str) -> None:
        self.name = name
        self.queue: FairQueue[_Message] = FairQueue()
        self.servers: list[InMemoryServer] = []


class InMemoryServer:
    """An endpoint serving one topic with ``concurrency`` worker tasks.

    The workers take the topic's messages and the server's own copies of fan-outs (its inbox),
    so a fan-out counts against the same concurrency as any other message.
    """

    def __init__(self, bus: InMemoryBus, topic: _Topic, endpoint: object, concurrency: int) -> None:
        self.bus = bus
        self.endpoint = endpoint
        self._topic = topic
        # Copies of fan-outs to this server; dropped if it stops first, as a broker drops the
        # queue a stopped server had for them.
        self._inbox: FairQueue[_Message] = FairQueue()
        self._stopping = False
        # Workers waiting for a message: the only ones a graceful stop may cancel.
        self._idle: set[asyncio.Task[None]] = set()
        self._workers = [
            asyncio.get_running_loop().create_task(self._work(), name=f"bus {topic.name} #{n}")
            for n in range(concurrency)
        ]

    @property
    def topic(self) -> str:
        return self._topic.name

    async def ready(self) -> None:
        """An in-process server takes messages from the start."""

    async def stop(self) -> None:
        self._leave()
        for worker in self._idle:
            worker.cancel()
        await self._wait()

    def _abort(self) -> None:
        self._leave()
        for worker in self._workers:
            worker.cancel()

    def _leave(self) -> None:
        self._stopping = True
        if self in self._topic.servers:
            self._topic.servers.remove(self)

    async def _wait(self) -> None:
        # A handler may stop its own server; it must not wait for itself.
        others = [worker for worker in self._workers if worker is not asyncio.current_task()]
        await asyncio.gather(*others, return_exceptions=True)

    async def _work(self) -> None:
        me = asyncio.current_task()
        assert me is not None
        while not self._stopping:
            # Cancelled while waiting, first_of gives back what it was handed: no message is lost.
            self._idle.add(me)
            try:
                queue, message = await first_of(self._inbox, self._topic.queue)
            finally:
                self._idle.discard(me)
            try:
                await self._serve(message)
            except Exception:
                # A fault of the bus itself (handle() catches the methods'): keep the worker.
                LOG.exception("bus %r: serving a message on %r failed", self.bus.name, self.topic)
            finally:
                queue.task_done()
            # A queue that holds messages hands them out without waiting, so a worker whose
            # handler never waits would take them all; yield, and the topic's servers take turns.
            await asyncio.sleep(0)

    async def _serve(self, message: _Message) -> None:
        reply = message.reply
        if reply is not None and reply.done():
            # The caller gave up before the call started; a broker would have let it expire.
            return
        token = _SERVING.set(self.bus)
        try:
            answer = await handle(
                self.endpoint, self.topic, message.body, wants_reply=reply is not None
            )
        finally:
            _SERVING.reset(token)
        if reply is not None and answer is not None and not reply.done():
            reply.set_result(answer)


class InMemoryBus:
    """A ``Bus`` inside one process and one event loop.

    ``call_timeout`` is the timeout of a call that gives none; ``close_timeout`` bounds how long
    ``close`` waits for work in flight. Use it as ``async with InMemoryBus() as bus:`` or call
    ``close`` yourself.
    """

    def __init__(
        self,
        name: str = "default",
        *,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self.name = name
        self.call_timeout = call_timeout
        self.close_timeout = close_timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._topics: dict[str, _Topic] = {}
        self._calls: set[asyncio.Future[str]] = set()
        # Messages sent so far: close waits until a whole pass of draining sends none.
        self._sent = 0
        self._closing = False
        self._closed = asyncio.Event()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def cast(self, topic: str, method: str, /, **kwargs: Any) -> None:
        body = encode_request(method, kwargs)
        self._bind()
        self._check_open()
        self._put(self._topic(topic), _Message(body))

    async def call(
        self, topic: str, method: str, /, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        body = encode_request(method, kwargs)
        limit = self.call_timeout if timeout is None else timeout
        if not limit > 0:
            raise ValueError(f"a call's timeout is a positive number of seconds, not {limit!r}")
        loop = self._bind()
        self._check_open()
        check_topic(topic)
        queue = self._topics.get(topic)
        if queue is None or not queue.servers:
            raise NoServer(topic)
        reply: asyncio.Future[str] = loop.create_future()
        self._calls.add(reply)
        try:
            self._put(queue, _Message(body, reply))
            # On timeout the wait is cancelled, and with it the reply future: a worker that has
            # not started the call yet will skip it.
            async with asyncio.timeout(limit):
                answer = await reply
        except TimeoutError:
            raise CallTimeout(topic, method, limit) from None
        finally:
            self._calls.discard(reply)
        return decode_reply(answer)

    async def fanout(self, topic: str, method: str, /, **kwargs: Any) -> None:
        body = encode_request(method, kwargs)
        self._bind()
        self._check_open()
        check_topic(topic)
        queue = self._topics.get(topic)
        for server in queue.servers if queue is not None else ():
            server._inbox.put(_Message(body))
            self._sent += 1

    def serve(self, topic: str, endpoint: object, *, concurrency: int = 1) -> InMemoryServer:
        if concurrency < 1:
            raise ValueError(f"a server's concurrency is at least 1, not {concurrency!r}")
        self._bind()
        if self._closing:
            raise BusClosed(f"bus {self.name!r} is closed")
        queue = self._topic(topic)
        server = InMemoryServer(self, queue, endpoint, concurrency)
        queue.servers.append(server)
        return server

    async def close(self, timeout: float | None = None) -> None:
        """Refuse new messages, wait up to ``timeout`` seconds (default ``close_timeout``) for the
        served topics' queues to empty and their handlers to finish, then stop every server.

        While closing, the bus still takes messages sent by its own handlers, so a chain of work
        in flight can finish. Calls still unanswered at the end get ``BusClosed``; casts still
        queued (a topic nobody serves, or out of time) are lost, and logged.
        """
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        limit = self.close_timeout if timeout is None else timeout
        try:
            async with asyncio.timeout(limit):
                await self._drain()
        except TimeoutError:
            LOG.warning(
                "bus %r: work in flight not done after %gs; cancelling it", self.name, limit
            )
        servers = [server for queue in self._topics.values() for server in queue.servers]
        for server in servers:
            server._abort()
        await asyncio.gather(*(server._wait() for server in servers))
        for reply in self._calls:
            if not reply.done():
                reply.set_exception(BusClosed(f"bus {self.name!r} closed before the reply"))
        lost = {name: queue.queue.qsize() for name, queue in self._topics.items()}
        if any(lost.values()):
            LOG.warning(
                "bus %r closed with messages never served: %s",
                self.name,
                ", ".join(f"{name}: {count}" for name, count in lost.items() if count),
            )
        self._closed.set()

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError(
                f"bus {self.name!r} belongs to another event loop; from another thread, "
                "use a BusClient"
            )
        return loop

    def _check_open(self) -> None:
        if self._closed.is_set() or (self._closing and _SERVING.get() is not self):
            raise BusClosed(f"bus {self.name!r} is closed")

    def _topic(self, name: str) -> _Topic:
        queue = self._topics.get(name)
        if queue is None:
            check_topic(name)
            queue = self._topics[name] = _Topic(name)
        return queue

    def _put(self, queue: _Topic, message: _Message) -> None:
        queue.queue.put(message)
        self._sent += 1

    async def _drain(self) -> None:
        # Handlers may send more as they finish (a conductor casting on to a compute host), so
        # drain until a whole pass sends nothing new. A topic nobody serves can never drain.
        while True:
            sent = self._sent
            servers = [server for queue in self._topics.values() for server in queue.servers]
            served = [queue.queue.join() for queue in self._topics.values() if queue.servers]
            await asyncio.gather(*served, *(server._inbox.join() for server in servers))
            if self._sent == sent:
                return

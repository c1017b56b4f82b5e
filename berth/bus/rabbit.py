"""The bus over RabbitMQ, through oslo.messaging's rabbit driver.

oslo.messaging blocks: its client waits for the broker. Here every blocking step runs in a thread
(see ``threads``) that the event loop awaits. oslo sends every message; the bus receives through
one listening connection for all the topics it serves (see ``listener``, which says why), and
each server runs its messages in threads of its own (``workers``), as many as its concurrency.
A message, as oslo carries it, names one of two methods, ``cast`` and ``call``, with one argument:
the Berth request as JSON text, the very text the in-process bus carries, checked and served by
the same code (``message``, ``dispatch``), so a message that works on one backend works on the
other.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import Awaitable
from contextlib import suppress
from contextvars import ContextVar
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar

import amqp.exceptions
import kombu.exceptions

from berth.bus.dispatch import handle_in_thread
from berth.bus.errors import BusClosed, BusUnavailable, CallTimeout, NoServer
from berth.bus.listener import Incoming, SharedListener
from berth.bus.message import check_topic, decode_reply, encode_request
from berth.bus.oslo import Names, declare_topic_queue, oslo_messaging, transport
from berth.bus.threads import in_thread
from berth.bus.url import RabbitURL
from berth.bus.workers import Workers

LOG = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_CALL_TIMEOUT = 60.0
DEFAULT_CLOSE_TIMEOUT = 10.0

# How often a send reconnects to a broker it cannot reach (1, 3 and 5 seconds apart, after oslo's
# own second each time) before it fails with BusUnavailable, rather than waiting for the broker
# for as long as it is away.
SEND_RETRIES = 3
# How long a cast or fan-out waits for this bus's servers to start listening: no longer than a
# send waits for the broker, since without a broker they never start.
SERVERS_START_WAIT = 10.0

# oslo bounds a call's publish, and the request's life in the queue, by the call's timeout; below
# a second, a slow publish would be taken for a dead connection and sent again. The caller still
# gets CallTimeout at its own timeout.
SHORTEST_BROKER_TIMEOUT = 1.0

# What oslo and the client libraries raise when the broker cannot be reached, refuses a request,
# or returns a message no queue takes (the mandatory flag).
BROKER_ERRORS = (
    oslo_messaging.MessagingException,
    oslo_messaging.MessageUndeliverable,
    kombu.exceptions.KombuError,
    amqp.exceptions.AMQPError,
    OSError,
)

# The server whose handler is running in this context (an oslo worker thread, and the coroutines
# and threads it starts): a closing bus still takes its handlers' messages.
_SERVING: ContextVar[RabbitServer | None] = ContextVar("berth_rabbit_serving", default=None)


class RabbitServer:
    """An endpoint serving one topic with up to ``concurrency`` threads of its own.

    Its messages come through the bus's one listening connection (see ``listener``), which
    starts consuming the topic's queues in its own thread: ``serve`` returns at once, and the
    bus's own messages wait until the topic is consumed.
    """

    def __init__(
        self,
        bus: RabbitBus,
        loop: asyncio.AbstractEventLoop,
        topic: str,
        endpoint: object,
        concurrency: int,
    ) -> None:
        self.bus = bus
        self.endpoint = endpoint
        self._loop = loop
        self._topic = topic
        self._workers = Workers(concurrency, f"berth-bus {topic}")
        self.started: asyncio.Future[None] = loop.create_task(self._start())

    @property
    def topic(self) -> str:
        return self._topic

    async def ready(self) -> None:
        await self.started

    async def stop(self) -> None:
        """Take no more messages, and return once the ones already taken are served.

        On RabbitMQ, "taken" is every message the broker has delivered to this server.
        """
        if _SERVING.get() is self:
            # Waiting for its own handlers would have this handler wait for itself.
            raise RuntimeError("a handler cannot wait for its own server to stop")
        self.bus._servers.discard(self)
        await self.started
        with suppress(BusClosed):
            await asyncio.wrap_future(self.bus._listening().remove(self))
        await in_thread(self._workers.shutdown)

    def take(self, message: Incoming) -> None:
        # In the listener's thread.
        self._workers.submit(partial(self._serve, message))

    async def _start(self) -> None:
        try:
            await asyncio.wrap_future(self.bus._listening().add(self))
        except (*BROKER_ERRORS, BusClosed, BusUnavailable):
            LOG.exception("bus %r: serving %r failed to start", self.bus.name, self.topic)
            self.bus._servers.discard(self)

    def _serve(self, message: Incoming) -> None:
        # In one of the server's threads. oslo's request is Berth's: a method "cast" or "call"
        # (whether anyone waits for the outcome) and one argument, the request's JSON text.
        kind = message.message.get("method")
        wants_reply = kind == "call"
        try:
            request = message.message["args"]["request"]
            if kind not in ("cast", "call") or not isinstance(request, str):
                raise ValueError(f"not a Berth request: {kind!r}")
            answer = self._handle(request, wants_reply=wants_reply)
        except Exception:
            LOG.exception("bus %r: a message to %r could not be served", self.bus.name, self.topic)
            if wants_reply:
                self._reply(message, failure=sys.exc_info())
            return
        if wants_reply:
            self._reply(message, answer=answer)

    def _reply(self, message: Incoming, *, answer: str | None = None, failure: Any = None) -> None:
        try:
            message.reply(answer, failure)
        except BROKER_ERRORS:
            LOG.exception("bus %r: the reply from %r was lost", self.bus.name, self.topic)

    def _handle(self, body: str, *, wants_reply: bool) -> str | None:
        token = _SERVING.set(self)
        try:
            return handle_in_thread(
                self.endpoint,
                self.topic,
                body,
                wants_reply=wants_reply,
                run_on_loop=self._run_on_loop,
            )
        finally:
            _SERVING.reset(token)

    def _run_on_loop(self, work: Awaitable[T]) -> T:
        runner = self._tracked(work)
        try:
            future = asyncio.run_coroutine_threadsafe(runner, self._loop)
        except RuntimeError:
            runner.close()
            if inspect.iscoroutine(work):
                work.close()
            raise BusClosed(f"bus {self.bus.name!r}: its event loop is closed") from None
        return future.result()

    async def _tracked(self, work: Awaitable[T]) -> T:
        # A closing bus that runs out of time cancels the handlers still running.
        task = asyncio.current_task()
        assert task is not None
        self.bus._handlers.add(task)
        try:
            return await work
        finally:
            self.bus._handlers.discard(task)


class RabbitBus:
    """A ``Bus`` over one RabbitMQ virtual host, for components in several processes.

    Its servers of a topic compete with the servers of every other process on the same broker,
    virtual host and namespace. ``namespace`` keeps its exchange and queues apart from other
    buses' (and from OpenStack's); ``call_timeout`` and ``close_timeout`` are as for
    ``InMemoryBus``. Nothing connects until the bus is first used; oslo reconnects after a broker
    restart, and heartbeats find a dead connection within a minute.

    Where it keeps the promises of ``Bus`` differently (oslo.messaging delivers at most once, and
    acknowledges a request as it arrives):

    - A server takes every message the broker delivers to it, and queues it until one of its
      ``concurrency`` threads is free: the servers of a topic take turns in delivery, busy or
      not. A stopping server serves everything it took; only what was not delivered yet stays in
      the broker for the next server. A process that dies loses what its servers had taken.
    - A call the caller gave up on is still served if a server had already taken it.
    - ``NoServer`` comes only for a topic the broker has no queue for: no server has started on
      it and nobody has cast to it since the broker started. A topic's queue outlives its
      servers, so a call to a topic whose servers have all stopped waits for the next server,
      and times out if none comes.
    - Queues are not durable (as oslo's and OpenStack's defaults): a broker restart loses the
      messages waiting in them.
    - Closing stops this process's servers and leaves the broker's messages to other servers;
      what a handler sends while the bus closes goes to the broker, perhaps after this bus's own
      servers of its topic have stopped.
    - A send fails with ``BusUnavailable`` after about ten seconds without the broker; a call
      whose timeout passes first fails with ``CallTimeout``, and may still be sent once the
      broker is back.
    """

    def __init__(
        self,
        url: RabbitURL,
        *,
        namespace: str = "berth",
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self.url = url
        # The URL without its password: names end up in logs.
        self.name = str(url)
        self.call_timeout = call_timeout
        self.close_timeout = close_timeout
        self._names = Names(namespace)
        self._transport = transport(url, self._names)
        # The mandatory flag has the broker return a message no queue takes, as NoServer.
        self._client = oslo_messaging.get_rpc_client(
            self._transport,
            oslo_messaging.Target(exchange=self._names.exchange),
            retry=SEND_RETRIES,
            transport_options=oslo_messaging.TransportOptions(at_least_once=True),
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listener: SharedListener | None = None
        self._servers: set[RabbitServer] = set()
        self._calls: set[asyncio.Future[str]] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._closing = False
        self._closed = asyncio.Event()

    def __repr__(self) -> str:
        return f"RabbitBus({self.name!r}, namespace={self.namespace!r})"

    @property
    def namespace(self) -> str:
        """The bus's exchange, and the first part of its queues' names."""
        return self._names.namespace

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
        self._check_sendable(topic)
        await self._servers_started(SERVERS_START_WAIT)
        await in_thread(self._cast_now, topic, body)

    async def fanout(self, topic: str, method: str, /, **kwargs: Any) -> None:
        body = encode_request(method, kwargs)
        self._check_sendable(topic)
        await self._servers_started(SERVERS_START_WAIT)
        await in_thread(self._fanout_now, topic, body)

    async def call(
        self, topic: str, method: str, /, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        body = encode_request(method, kwargs)
        limit = self.call_timeout if timeout is None else timeout
        if not limit > 0:
            raise ValueError(f"a call's timeout is a positive number of seconds, not {limit!r}")
        self._check_sendable(topic)
        try:
            async with asyncio.timeout(limit):
                await self._servers_started(limit)
                answer = await self._call(topic, method, body, limit)
        except TimeoutError:
            raise CallTimeout(topic, method, limit) from None
        return decode_reply(answer)

    def serve(self, topic: str, endpoint: object, *, concurrency: int = 1) -> RabbitServer:
        if concurrency < 1:
            raise ValueError(f"a server's concurrency is at least 1, not {concurrency!r}")
        loop = self._bind()
        if self._closing:
            raise BusClosed(f"bus {self.name!r} is closed")
        check_topic(topic)
        server = RabbitServer(self, loop, topic, endpoint, concurrency)
        self._servers.add(server)
        return server

    async def close(self, timeout: float | None = None) -> None:
        """Refuse new messages, stop every server, waiting up to ``timeout`` seconds (default
        ``close_timeout``) for the messages they took, then let go of the broker.

        While closing, the bus still sends its own handlers' messages. Out of time, it cancels
        the ``async def`` handlers still running and gives them as long again to end. Calls
        still unanswered at the end get ``BusClosed``. Letting go of the broker gets as long
        again too: without a broker it may never end, and is left to its thread.
        """
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        limit = self.close_timeout if timeout is None else timeout
        stopped = asyncio.gather(*(server.stop() for server in list(self._servers)))
        if not await _done_within(stopped, limit):
            LOG.warning(
                "bus %r: work in flight not done after %gs; cancelling it", self.name, limit
            )
            self._fail_calls()
            for handler in list(self._handlers):
                handler.cancel()
            if not await _done_within(stopped, limit):
                LOG.warning("bus %r: servers still busy; leaving them", self.name)
        self._fail_calls()
        # A call still waiting for the broker to create its reply queue holds the lock that
        # letting go of the transport needs; leave it to its thread rather than wait forever.
        if not await _done_within(in_thread(self._let_go, limit), limit):
            LOG.warning("bus %r: the broker connections did not close in %gs", self.name, limit)
        self._closed.set()

    def _listening(self) -> SharedListener:
        """The bus's one listening connection, for every topic it serves; made on first use."""
        if self._listener is None:
            self._listener = SharedListener(self._transport, self._names, self.name)
        return self._listener

    def _let_go(self, limit: float) -> None:
        if self._listener is not None and not self._listener.close(limit):
            LOG.warning("bus %r: the listening connection did not close in %gs", self.name, limit)
        self._transport.cleanup()

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

    def _check_sendable(self, topic: str) -> None:
        self._bind()
        serving = _SERVING.get()
        if self._closed.is_set() or (
            self._closing and (serving is None or serving.bus is not self)
        ):
            raise BusClosed(f"bus {self.name!r} is closed")
        check_topic(topic)

    async def _servers_started(self, patience: float) -> None:
        # A message sent after serve() returned must find the server listening, as on the
        # in-process bus; the servers of other processes are their own business.
        starting = [server.started for server in self._servers if not server.started.done()]
        if starting:
            await asyncio.wait(starting, timeout=patience)

    async def _call(self, topic: str, method: str, body: str, limit: float) -> str:
        reply = in_thread(self._call_now, topic, method, body, limit)
        self._calls.add(reply)
        try:
            # Cancelled at the call's timeout: the thread's answer, if it ever comes, goes
            # nowhere.
            return await reply
        finally:
            self._calls.discard(reply)

    def _fail_calls(self) -> None:
        for reply in self._calls:
            if not reply.done():
                reply.set_exception(BusClosed(f"bus {self.name!r} closed before the reply"))

    # What runs in threads: oslo's blocking client, its errors turned into the bus's.

    def _cast_now(self, topic: str, body: str) -> None:
        client = self._client.prepare(topic=self._names.topic(topic))
        try:
            try:
                client.cast({}, "cast", request=body)
            except oslo_messaging.MessageUndeliverable:
                # The broker returned it: no queue yet, which oslo declares only as a server
                # starts. Declared now, it keeps the cast for the first server.
                declare_topic_queue(self.url, self._names, topic)
                client.cast({}, "cast", request=body)
        except BROKER_ERRORS as exc:
            raise BusUnavailable(f"bus {self.name!r}: cast to {topic!r} failed: {exc}") from exc

    def _fanout_now(self, topic: str, body: str) -> None:
        client = self._client.prepare(topic=self._names.topic(topic), fanout=True)
        try:
            client.cast({}, "cast", request=body)
        except BROKER_ERRORS as exc:
            raise BusUnavailable(f"bus {self.name!r}: fan-out to {topic!r} failed: {exc}") from exc

    def _call_now(self, topic: str, method: str, body: str, limit: float) -> str:
        client = self._client.prepare(
            topic=self._names.topic(topic), timeout=max(limit, SHORTEST_BROKER_TIMEOUT)
        )
        try:
            answer: str = client.call({}, "call", request=body)
        except oslo_messaging.MessageUndeliverable:
            raise NoServer(topic) from None
        except oslo_messaging.MessagingTimeout:
            raise CallTimeout(topic, method, limit) from None
        except BROKER_ERRORS as exc:
            raise BusUnavailable(f"bus {self.name!r}: call to {topic!r} failed: {exc}") from exc
        return answer


async def _done_within(work: asyncio.Future[Any], seconds: float) -> bool:
    """Wait up to ``seconds`` for ``work``; True, and its exception raised, if it ended."""
    done, _ = await asyncio.wait([work], timeout=seconds)
    if done:
        work.result()
    return bool(done)

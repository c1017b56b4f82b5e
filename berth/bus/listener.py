"""One broker connection that takes the messages of every topic a RabbitMQ bus serves.

oslo.messaging gives each RPC server a listening connection of its own; a process simulating a
thousand compute hosts, one topic each, opened a thousand, and a small broker stopped accepting
them in time. Here a bus listens on one connection, with the consumers oslo's server would have
declared for each topic (``<ns>.<topic>``, ``<ns>.<topic>.shared`` and a fan-out queue), so the
broker's queues, exchanges and routing are exactly as before and senders see no difference.

It is built from the rabbit driver's own parts rather than from kombu directly: the driver's
``Connection`` reconnects, re-declares every consumer it holds after a reconnect, and keeps the
heartbeats while it consumes; its RPC listener acknowledges each request as it arrives and turns
it into a message whose ``reply`` speaks oslo's reply format. A kombu consumer of Berth's own
would have had to copy all of that, the wire format included. The cost is reaching below oslo's
public API (the driver, its listener class, and the connection's consumer table, which has no
call to remove one consumer): ``_cancel`` is the one place that edits the table.

A listening connection is not thread-safe (oslo gives it no lock), so one thread owns it: it
runs the consumer changes that ``add`` and ``remove`` queue, then consumes for a moment, in turn.
Each consumer's callback knows its topic, and hands the message to a receiver of that topic in
the same thread, so a consumer cancelled while its last receiver is still listed loses nothing.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from berth.bus.errors import BusClosed, BusUnavailable
from berth.bus.oslo import Names, amqpdriver, oslo_messaging, rpc_common

LOG = logging.getLogger(__name__)

# How long the thread consumes before it looks for consumer changes: what a new server waits at
# most before its consumers are declared. Heartbeats are checked each time too.
POLL_SECONDS = 0.05

# An incoming request, as oslo's RPC listener makes it: ``.message`` is the request's method and
# arguments, ``.reply()`` answers a call.
Incoming = Any


class Receiver(Protocol):
    """What serves one topic's messages: a ``RabbitServer``."""

    @property
    def topic(self) -> str: ...

    def take(self, message: Incoming) -> None:
        """Called in the listener's thread, once per message; must not block."""
        ...


@dataclass(eq=False)
class _Topic:
    # oslo's consumers of the topic's queues, on the listening connection.
    consumers: list[Any]
    receivers: list[Receiver] = field(default_factory=list)
    # The next receiver of a message to the topic: the bus's servers of one topic take turns.
    turn: int = 0


_Task = tuple[Callable[[], None], "Future[None]", bool]


class SharedListener:
    """The listening connection of one bus, and the thread that owns it."""

    def __init__(self, transport: oslo_messaging.Transport, names: Names, name: str) -> None:
        self._driver = transport._driver
        self._names = names
        self._name = name
        self._tasks: queue.SimpleQueue[_Task] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closing = False
        # What ``add`` and ``remove`` fail with once the thread has ended.
        self._ended: Exception = BusClosed(f"bus {name!r} is closed")
        self._topics: dict[str, _Topic] = {}
        # Additions whose consumers start with the next consume.
        self._confirming: list[Future[None]] = []
        self._conn: Any = None
        self._listener: Any = None
        self._thread = threading.Thread(target=self._run, name=f"berth-bus {name}", daemon=True)
        self._thread.start()

    def add(self, receiver: Receiver) -> Future[None]:
        """Start giving ``receiver`` its topic's messages; done once the topic is consumed."""
        return self._do(partial(self._add, receiver), confirm=True)

    def remove(self, receiver: Receiver) -> Future[None]:
        """Stop giving ``receiver`` messages; done once it will get no more.

        The topic's last receiver is removed after its consumers are cancelled: what the broker
        delivered before that still goes to it.
        """
        return self._do(partial(self._remove, receiver), confirm=False)

    def close(self, timeout: float) -> bool:
        """Let go of the connection (blocking); False if the thread did not end in time."""
        with self._lock:
            self._closing = True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _do(self, change: Callable[[], None], *, confirm: bool) -> Future[None]:
        done: Future[None] = Future()
        with self._lock:
            if self._closing:
                done.set_exception(self._ended)
            else:
                self._tasks.put((change, done, confirm))
        return done

    # In the listener's thread.

    def _run(self) -> None:
        try:
            # oslo connects here, retrying for as long as the broker is away.
            self._conn = self._driver._get_connection(rpc_common.PURPOSE_LISTEN)
            self._listener = amqpdriver.RpcAMQPListener(self._driver, self._conn)
            while not self._closing:
                self._run_tasks()
                self._consume()
        except Exception as exc:
            LOG.exception("bus %r: the listening connection failed", self._name)
            self._ended = BusUnavailable(f"bus {self._name!r} cannot listen: {exc}")
        finally:
            with self._lock:
                self._closing = True
            self._fail_tasks(self._ended)
            self._disconnect()

    def _run_tasks(self) -> None:
        while True:
            try:
                change, done, confirm = self._tasks.get_nowait()
            except queue.Empty:
                return
            try:
                change()
            except Exception as exc:
                done.set_exception(exc)
                continue
            if confirm:
                self._confirming.append(done)
            else:
                done.set_result(None)

    def _consume(self) -> None:
        try:
            self._conn.consume(timeout=POLL_SECONDS)
        except rpc_common.Timeout:
            pass
        except Exception:
            # Not a lost broker (oslo reconnects to that by itself) but a refusal; oslo starts
            # the consumers again next time.
            LOG.exception("bus %r: consuming failed; trying again in a second", self._name)
            time.sleep(1)
            return
        # oslo starts new consumers before it waits for messages; those still waiting to start
        # (the broker is away) start once it reconnects.
        if self._confirming and not self._conn._new_tags:
            for done in self._confirming:
                done.set_result(None)
            self._confirming.clear()

    def _fail_tasks(self, exc: BaseException) -> None:
        for done in self._confirming:
            done.set_exception(exc)
        self._confirming.clear()
        while True:
            try:
                _, done, _ = self._tasks.get_nowait()
            except queue.Empty:
                return
            done.set_exception(exc)

    def _add(self, receiver: Receiver) -> None:
        topic = self._topics.get(receiver.topic)
        if topic is None:
            topic = self._topics[receiver.topic] = _Topic(self._declare(receiver.topic))
        topic.receivers.append(receiver)

    def _remove(self, receiver: Receiver) -> None:
        topic = self._topics.get(receiver.topic)
        if topic is None or receiver not in topic.receivers:
            return
        if len(topic.receivers) == 1:
            self._cancel(topic.consumers)
            del self._topics[receiver.topic]
        topic.receivers.remove(receiver)

    def _declare(self, topic: str) -> list[Any]:
        """The consumers oslo's RPC server declares for ``topic``, with callbacks of its own."""
        direct = partial(self._delivered, topic, False)
        fanout = partial(self._delivered, topic, True)
        exchange = self._names.exchange

        def declared() -> list[Any]:
            return [c for c in self._conn._consumers if c.callback in (direct, fanout)]

        try:
            self._conn.declare_topic_consumer(exchange, self._names.topic(topic), direct)
            self._conn.declare_topic_consumer(exchange, self._names.server_queue(topic), direct)
            self._conn.declare_fanout_consumer(self._names.topic(topic), fanout)
        except BaseException:
            # Half a topic would take some of its messages and never serve them.
            self._cancel(declared())
            raise
        return declared()

    def _cancel(self, consumers: list[Any]) -> None:
        """Take ``consumers`` off the connection, so a reconnect does not declare them again."""
        conn = self._conn
        # oslo's connection (behind its context) and, behind that, kombu's.
        kombu_conn = conn.connection.connection
        broker_errors = (*kombu_conn.connection_errors, *kombu_conn.channel_errors)
        for consumer in consumers:
            tag = conn._consumers.pop(consumer, None)
            conn._active_tags.pop(consumer.queue_name, None)
            if tag is None:
                continue
            started = tag not in conn._new_tags
            conn._new_tags.discard(tag)
            try:
                if started:
                    consumer.cancel(tag)
                # As oslo does as a server's connection closes: nobody else reads this queue.
                if consumer.type == "fanout":
                    consumer.queue.delete()
            except broker_errors as exc:
                # The connection is gone; the next consume reconnects without this consumer.
                LOG.warning(
                    "bus %r: cancelling %s failed: %s", self._name, consumer.queue_name, exc
                )

    def _delivered(self, topic: str, fanout: bool, message: Any) -> None:
        # oslo's listener acknowledges the request, drops a duplicate, and makes the message.
        self._listener(message)
        if not self._listener.incoming:
            return
        incoming = self._listener.incoming.pop()
        served = self._topics.get(topic)
        if served is None:
            # Consumers are cancelled before their topic's last receiver goes.
            LOG.error(
                "bus %r: a message to %r arrived with no server to take it", self._name, topic
            )
            return
        LOG.debug("bus %r: %s to %r", self._name, "fan-out" if fanout else "message", topic)
        if fanout:
            for receiver in served.receivers:
                receiver.take(incoming)
        else:
            served.turn = (served.turn + 1) % len(served.receivers)
            served.receivers[served.turn].take(incoming)

    def _disconnect(self) -> None:
        if self._conn is None:
            return
        try:
            # Deletes the fan-out queues of the topics still served, as oslo's servers do.
            self._conn.close()
        except Exception:
            LOG.warning(
                "bus %r: closing the listening connection failed", self._name, exc_info=True
            )

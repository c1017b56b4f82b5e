"""The bus as every compute component sees it, whatever carries the messages.

A message goes to a topic (``conductor``, ``scheduler``, ``compute.<host>``, ``cell-conductor.<cell>``)
and names a method of the endpoint serving it, with JSON-serialisable keyword arguments. Nothing
here knows about asyncio queues or AMQP: the in-process backend and a broker-backed one must be
interchangeable, so a component written against this works in the all-in-one mode and in a
deployment alike.
"""

from __future__ import annotations

from typing import Any, Protocol


class Server(Protocol):
    """An endpoint serving a topic, from ``Bus.serve`` until ``stop``."""

    @property
    def topic(self) -> str: ...

    async def ready(self) -> None:
        """Return once the server takes messages (a broker's server connects first); a server
        that could not start returns too, having logged why."""
        ...

    async def stop(self) -> None:
        """Take no more messages, and return once the ones already taken are served.

        The topic's other messages stay queued for its other servers, or for the next one.
        """
        ...


class Bus(Protocol):
    """What every backend promises.

    ``InMemoryBus`` keeps each promise as written. ``RabbitBus`` keeps them through a broker,
    with the differences its docstring lists; the main ones: a server there takes every message
    the broker delivers to it, before a worker is free for it, so a stopping server serves more
    and leaves less queued; and ``NoServer`` comes only for a topic with no queue on the broker.
    """

    async def cast(self, topic: str, method: str, /, **kwargs: Any) -> None:
        """Send ``method(**kwargs)`` to one server of ``topic``, and wait for nothing.

        Returns once the message is queued. A topic nobody serves yet keeps it until a server
        appears, as a durable queue would. The method's exception is logged by the server.
        Casts from one sender to one topic are taken in the order they were sent.

        Raises TypeError (ValueError for NaN or a cycle) at once if an argument is not JSON.
        """
        ...

    async def call(
        self, topic: str, method: str, /, timeout: float | None = None, **kwargs: Any
    ) -> Any:
        """Send ``method(**kwargs)`` to one server of ``topic`` and return what it returns.

        ``timeout`` is in seconds; None means the bus's default. ``timeout`` is therefore not
        available as an argument name of a method reached by ``call``.

        Raises ``NoServer`` at once if nobody serves the topic, ``CallTimeout`` if no reply comes in
        time (the method may still run), ``NoSuchMethod`` if the server has no such public method,
        ``RemoteError`` if the method raised, and TypeError for an argument that is not JSON.
        """
        ...

    async def fanout(self, topic: str, method: str, /, **kwargs: Any) -> None:
        """Send ``method(**kwargs)`` to every server of ``topic``, a copy each; wait for nothing.

        Returns once the copies are queued. Only the servers serving the topic at that moment get
        one: unlike a cast, a fan-out to a topic nobody serves is dropped, and a server that stops
        before it runs its copy may drop it. A server runs its copy as it runs a cast (within its
        concurrency, failures logged); there is no order between fan-outs and casts.

        Raises TypeError (ValueError for NaN or a cycle) at once if an argument is not JSON.
        """
        ...

    def serve(self, topic: str, endpoint: object, *, concurrency: int = 1) -> Server:
        """Serve ``topic`` with the public methods of ``endpoint``.

        ``async def`` methods run on the bus's event loop; plain methods run in a worker thread.
        Several servers of one topic share its messages round-robin, as competing consumers of
        one queue. A server takes ``concurrency`` messages at a time: with 1 (the default) a
        topic with one server handles its messages strictly one after another, in order; with
        more, they start in order but may finish in any order.
        """
        ...

    async def close(self) -> None:
        """Take no new messages, let the work in flight finish, then stop every server."""
        ...

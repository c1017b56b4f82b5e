"""Small pieces every Berth ASGI app shares: the path it routes on, the lifespan protocol, and
spreading kept-alive connections over worker processes."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

Hook = Callable[[], Awaitable[None]]
P = ParamSpec("P")
T = TypeVar("T")
# As many blocking calls at once per app as Starlette's default thread limit allows.
HANDLER_THREADS = 40


# Set while an app is driven in its caller's thread (berth.common.inprocess, ``inline``): its
# blocking work then runs right there, as nothing else waits on that thread.
_INLINE: contextvars.ContextVar[bool] = contextvars.ContextVar("berth_inline", default=False)


@contextmanager
def inline() -> Iterator[None]:
    """Within: ``HandlerThreads.run`` calls its function in the current thread."""
    token = _INLINE.set(True)
    try:
        yield
    finally:
        _INLINE.reset(token)


class HandlerThreads:
    """The threads an app runs its blocking work on (storage is synchronous).

    Not anyio's pool (Starlette's ``run_in_threadpool``): its idle threads belong to the task that
    started the event loop, and on a loop that runs each request as a task of its own (the
    in-process transport's) every call started a thread and stopped it again, a millisecond each.
    Within ``inline()`` the work runs in the calling thread instead.
    """

    def __init__(self, name: str, threads: int = HANDLER_THREADS) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix=name)

    async def run(self, func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``func(*args, **kwargs)`` on one of the threads, with the caller's context variables."""
        if _INLINE.get():
            # Cleared while it runs, so that what the work starts (its own in-process calls
            # on the shared loop, threads that copy its context) is not inline too.
            token = _INLINE.set(False)
            try:
                return func(*args, **kwargs)
            finally:
                _INLINE.reset(token)
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, lambda: context.run(func, *args, **kwargs))


# What a request the client hung up on is answered with, for the record: nobody receives it
# (nginx's "client closed request").
CLIENT_GONE = 499


def client_gone(log: logging.Logger, request_id: str) -> Response:
    """A client that hung up before its request was read: nothing failed on the server's side,
    so one DEBUG line and no traceback."""
    log.debug("%s: the client hung up before its request was read", request_id)
    return Response(status_code=CLIENT_GONE)


def log_failure(log: logging.Logger, request_id: str, exc: BaseException, status: int) -> None:
    """How a request that ended in an exception is logged: answered with a 5xx, one ERROR line
    with the request id (which the client was given, to quote) and the error, the traceback at
    DEBUG only; a refusal of the request (4xx) is the client's business and not logged here."""
    if status < 500:
        return
    log.error("%s failed with %d: %s: %s", request_id, status, type(exc).__name__, exc)
    log.debug("%s failed here:", request_id, exc_info=exc)


def routed_path(scope: Scope) -> str:
    """The request's path below the app's mount point (servers that put the mount point in
    ``root_path`` differ on whether ``path`` still holds it)."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :] or "/"
    return path


async def lifespan(
    receive: Receive, send: Send, startup: Hook | None = None, shutdown: Hook | None = None
) -> None:
    """Answer the ASGI lifespan messages, running the app's hooks on the way."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if startup is not None:
                await startup()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if shutdown is not None:
                await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return


class SpreadConnections:
    """Close a kept-alive connection after ``requests`` requests (``Connection: close`` on the
    last answer), so that its client opens another.

    Worker processes share one listening socket, and the one that accepts a connection serves
    every request on it. Clients that keep a few connections open (a scheduler does) would
    otherwise stay on whichever worker accepted them first, often all on one, while the others
    idle. Reconnecting now and then spreads them again, as nginx's ``keepalive_requests`` does.
    """

    # Counts of connections that closed early are forgotten once this many are kept.
    _KEPT = 10_000

    def __init__(self, app: ASGIApp, requests: int) -> None:
        self.app = app
        self.requests = requests
        self._served: dict[tuple[str, int], int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = scope.get("client") if scope["type"] == "http" else None
        if client is None:
            await self.app(scope, receive, send)
            return
        key = (client[0], client[1])
        served = self._served.pop(key, 0) + 1
        if served < self.requests:
            if len(self._served) >= self._KEPT:
                self._served.clear()
            self._served[key] = served
            await self.app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (b"connection", b"close")]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, closing)


def spread_over_workers(app: ASGIApp, workers: int, requests: int) -> ASGIApp:
    """``app`` behind ``SpreadConnections`` when there are several workers to spread over and
    ``requests`` is not 0 (off)."""
    return SpreadConnections(app, requests) if workers > 1 and requests > 0 else app

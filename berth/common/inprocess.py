"""Calling an ASGI app of this process through httpx, without sockets.

The all-in-one stack's services call each other as they would apart, over their HTTP APIs. The
request body is read whole and the answer gathered whole: every Berth client reads whole answers.

An app runs either on one event loop thread that every in-process transport shares, its blocking
work on its handler threads (as it would behind a server), or, with ``inline``, in the caller's
thread from start to end: an app whose every await is its handler threads' work (Placement,
Networking, Compute) completes without suspending, so no thread need be woken, at a quarter less
per call. One that truly waits (the image API, which streams an upload to its handler) needs the
loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import httpx
from starlette.types import Message

from berth.common import asgi

T = TypeVar("T")

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
# How long a call may wait for the app before the caller gives up, as a socket's read timeout.
TIMEOUT_SECONDS = 300.0


def _shared_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="in-process apps", daemon=True).start()
        return _loop


class InProcessTransport(httpx.BaseTransport):
    """An httpx transport whose requests ``app`` answers in this process."""

    def __init__(self, app: Any, inline: bool = False) -> None:
        self.app = app
        self.inline = inline

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        if self.inline:
            try:
                status, headers, chunks = _drive(_call(self.app, _scope(request), body))
            except Exception as exc:
                raise httpx.RemoteProtocolError(
                    f"the app failed: {exc!r}", request=request
                ) from exc
            return httpx.Response(
                status, headers=headers, content=b"".join(chunks), request=request
            )
        future = asyncio.run_coroutine_threadsafe(
            _call(self.app, _scope(request), body), _shared_loop()
        )
        try:
            status, headers, chunks = future.result(TIMEOUT_SECONDS)
        except TimeoutError as exc:
            future.cancel()
            raise httpx.ReadTimeout(str(exc) or "the app did not answer", request=request) from exc
        except Exception as exc:
            # As a server that fails mid-request drops its connection.
            raise httpx.RemoteProtocolError(f"the app failed: {exc!r}", request=request) from exc
        return httpx.Response(status, headers=headers, content=b"".join(chunks), request=request)


def _drive(call: Coroutine[Any, Any, T]) -> T:
    """``call`` run to its end in this thread, its blocking work inline (berth.common.asgi), in
    a copy of the caller's context variables: what the app sets stays the app's, as it would
    in a task of the loop."""
    return contextvars.copy_context().run(_drive_here, call)


def _drive_here(call: Coroutine[Any, Any, T]) -> T:
    with asgi.inline():
        try:
            call.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
    call.close()
    raise RuntimeError("an app driven inline waited on its event loop; it needs inline=False")


def _scope(request: httpx.Request) -> dict[str, Any]:
    url = request.url
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": url.scheme,
        "path": url.path,
        "raw_path": url.raw_path.split(b"?", 1)[0],
        "query_string": url.query,
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.headers.raw],
        "client": ("127.0.0.1", 0),
        "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
    }


async def _call(
    app: Any, scope: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], list[bytes]]:
    received = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> Message:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        # Nothing more will come: as a server does, wait until the answer is complete.
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = list(message.get("headers", ()))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await app(scope, receive, send)
    return status, headers, chunks

"""Calling an ASGI app of this process through httpx, without sockets.

The all-in-one stack's services call each other as they would apart, over their HTTP APIs; in
one process each call costs no more than one hop to the app's event loop and one back. The
request body is read whole, the app runs on one event loop thread that every in-process transport
shares, and its answer is gathered whole: every Berth client reads whole answers.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
from starlette.types import Message

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

    def __init__(self, app: Any) -> None:
        self.app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
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

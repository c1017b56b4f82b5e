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
import re
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar
from urllib.parse import unquote

import httpx
import orjson
from starlette.types import Message

from berth.common import asgi, auth
from berth.common.context import RequestContext

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

    def __init__(
        self, app: Any, inline: bool = False, caller: RequestContext | None = None
    ) -> None:
        self.app = app
        self.inline = inline
        # Who the requests come from, handed to the app as is (berth.common.auth.caller).
        self.caller = caller

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        status, headers, body = self.answer(self._scope(request), request.read(), request)
        return httpx.Response(status, headers=headers, content=body, request=request)

    def answer(
        self, scope: dict[str, Any], body: bytes, request: httpx.Request | None = None
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """The app's answer to one request (``scope`` and its whole ``body``): its status,
        headers and whole body. A failure of the app is httpx's, as a dropped connection."""
        if self.inline:
            try:
                status, headers, chunks = _drive(_call(self.app, scope, body))
            except Exception as exc:
                raise httpx.RemoteProtocolError(
                    f"the app failed: {exc!r}", request=request
                ) from exc
            return status, headers, b"".join(chunks)
        future = asyncio.run_coroutine_threadsafe(_call(self.app, scope, body), _shared_loop())
        try:
            status, headers, chunks = future.result(TIMEOUT_SECONDS)
        except TimeoutError as exc:
            future.cancel()
            raise httpx.ReadTimeout(str(exc) or "the app did not answer", request=request) from exc
        except Exception as exc:
            # As a server that fails mid-request drops its connection.
            raise httpx.RemoteProtocolError(f"the app failed: {exc!r}", request=request) from exc
        return status, headers, b"".join(chunks)

    def _scope(self, request: httpx.Request) -> dict[str, Any]:
        url = request.url
        return self.scope(
            request.method,
            url.path,
            url.raw_path.split(b"?", 1)[0],
            url.query,
            [(name.lower(), value) for name, value in request.headers.raw],
            (url.host, url.port or (443 if url.scheme == "https" else 80)),
            url.scheme,
        )

    def scope(
        self,
        method: str,
        path: str,
        raw_path: bytes,
        query: bytes,
        headers: list[tuple[bytes, bytes]],
        server: tuple[str, int],
        scheme: str = "http",
    ) -> dict[str, Any]:
        """An HTTP request's ASGI scope, naming this transport's caller if it has one."""
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": scheme,
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 0),
            "server": server,
        }
        if self.caller is not None:
            scope[auth.IN_PROCESS_CALLER] = self.caller
        return scope


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


_CLIENT_DEFAULT = httpx.USE_CLIENT_DEFAULT
# What httpx leaves unencoded in a path; a path with anything else takes httpx's own way.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*")


class InProcessClient(httpx.Client):
    """An httpx client of an app in this process, for a caller its transport names (no token to
    sign, berth.common.auth.caller), or whose every call carries the same ``headers`` (a fixed
    noauth2 token, which the app checks as it would any).

    A ``request`` with nothing but a path, ``params``, ``json``, ``content`` bytes and
    ``headers`` (every call Berth's service clients make) goes straight to the app, without
    httpx's client machinery (URL merging, the auth flow, cookies, redirects, event hooks): two
    thirds of an in-process call's cost went there. Anything else takes httpx's own way.
    """

    def __init__(
        self,
        transport: InProcessTransport,
        base_url: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(transport=transport, base_url=base_url, headers=headers)
        self._app = transport
        url = httpx.URL(base_url)
        self._server = (url.host, url.port or 80)
        self._prefix = url.path.rstrip("/")
        self._origin = f"{url.scheme}://{url.netloc.decode()}"
        self._host = url.netloc.decode()

    def request(  # type: ignore[override]
        self,
        method: str,
        url: httpx.URL | str,
        *,
        content: bytes | None = None,
        json: Any = None,
        params: Any = None,
        headers: Mapping[str, str] | None = None,
        **other: Any,
    ) -> httpx.Response:
        path = self._prefix + url if isinstance(url, str) else ""
        # get(), post()... pass every option, mostly at its default.
        other = {k: v for k, v in other.items() if v is not None and v is not _CLIENT_DEFAULT}
        if other or not path.startswith("/") or not _PLAIN_PATH.fullmatch(path) or (
            content is not None and not isinstance(content, bytes)
        ):  # fmt: skip
            return super().request(
                method, url, content=content, json=json, params=params, headers=headers, **other
            )
        body = content or b""
        sent = {name.lower(): value for name, value in self.headers.items()}
        sent["host"] = self._host
        if json is not None:
            # As httpx would send it (int keys as strings), only faster.
            body = orjson.dumps(json, option=orjson.OPT_NON_STR_KEYS)
            sent["content-type"] = "application/json"
        if body:
            sent["content-length"] = str(len(body))
        if headers:
            sent.update((name.lower(), value) for name, value in headers.items())
        query = str(httpx.QueryParams(params)).encode() if params else b""
        scope = self._app.scope(
            method.upper(),
            unquote(path) if "%" in path else path,
            path.encode(),
            query,
            [(name.encode(), value.encode()) for name, value in sent.items()],
            self._server,
        )
        status, answer_headers, answer_body = self._app.answer(scope, body)
        answer = _Answer(status, headers=answer_headers, content=answer_body)
        answer.asked = (method, self._origin + path + ("?" + query.decode() if query else ""), sent)
        return answer


class _Answer(httpx.Response):
    """An in-process client's response: its request is made only when asked for (for
    ``raise_for_status``, say), not for every call."""

    asked: tuple[str, str, dict[str, str]]

    @property
    def request(self) -> httpx.Request:
        if self._request is None:
            method, url, headers = self.asked
            self._request = httpx.Request(method, url, headers=headers)
        return self._request

    @request.setter
    def request(self, value: httpx.Request) -> None:
        self._request = value

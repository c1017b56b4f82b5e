"""SpreadConnections: a kept-alive connection is closed after so many requests."""

from __future__ import annotations

import asyncio

from starlette.types import Message, Receive, Scope, Send

from berth.common.asgi import SpreadConnections, spread_over_workers


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-a", b"1")]})
    await send({"type": "http.response.body", "body": b"ok"})


def _headers(app: SpreadConnections, client: tuple[str, int] | None) -> list[tuple[bytes, bytes]]:
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "client": client, "method": "GET", "path": "/"}
    asyncio.run(app(scope, receive, send))
    assert sent[1] == {"type": "http.response.body", "body": b"ok"}
    return list(sent[0]["headers"])


def test_every_third_request_on_a_connection_closes_it() -> None:
    app = SpreadConnections(_ok, requests=3)
    one, other = ("10.0.0.1", 40000), ("10.0.0.1", 40001)
    closes = [(b"connection", b"close") in _headers(app, one) for _ in range(7)]
    assert closes == [False, False, True, False, False, True, False]
    # Another connection counts on its own.
    assert (b"connection", b"close") not in _headers(app, other)
    assert _headers(app, one)[0] == (b"x-a", b"1")


def test_a_connection_without_a_peer_address_is_left_alone() -> None:
    app = SpreadConnections(_ok, requests=1)
    assert _headers(app, None) == [(b"x-a", b"1")]


def test_only_several_workers_with_a_count_get_connections_spread() -> None:
    assert spread_over_workers(_ok, workers=1, requests=100) is _ok
    assert spread_over_workers(_ok, workers=2, requests=0) is _ok
    spread = spread_over_workers(_ok, workers=2, requests=100)
    assert isinstance(spread, SpreadConnections)
    assert spread.requests == 100

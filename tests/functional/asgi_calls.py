"""Raw ASGI calls for what an HTTP client library cannot do (hang up halfway through sending a
request body, as a client that goes away does), and the checks of what every API logs then and
when a request fails with a 5xx."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from starlette.types import ASGIApp, Message


def call(
    app: ASGIApp,
    method: str,
    path: str,
    chunks: list[bytes],
    *,
    hang_up: bool,
    content_type: bytes = b"application/json",
) -> Message:
    """Call ``app`` with a body sent in ``chunks``; with ``hang_up`` the client disconnects
    after the chunks instead of ending the body. The first message the app sent back."""
    messages: list[Message] = [
        {"type": "http.request", "body": chunk, "more_body": True} for chunk in chunks
    ]
    if not hang_up:
        messages.append({"type": "http.request", "body": b"", "more_body": False})
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"x-auth-token", b"admin"),
            (b"content-type", content_type),
            (b"accept", b"application/json"),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("berth", 80),
    }
    asyncio.run(app(scope, receive, send))
    return sent[0]


def tracebacks(records: list[logging.LogRecord], level: int) -> list[logging.LogRecord]:
    """The records at ``level`` or above that carry a traceback."""
    return [r for r in records if r.levelno >= level and r.exc_info is not None]


def check_hang_up_is_one_debug_line(
    app: ASGIApp, method: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    call(app, method, path, [b'{"name": "half'], hang_up=True)
    assert tracebacks(caplog.records, logging.DEBUG) == []
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert any("hung up" in r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG)


def check_failure_is_one_error_line(
    app: Any, threads: Any, method: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the handler broke")

    threads.run = broken
    start = call(app, method, path, [b"{}"], hang_up=False)
    assert start["status"] == 500
    request_id = dict(start["headers"])[b"x-openstack-request-id"].decode()
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(errors) == 1 and errors[0].levelno == logging.ERROR
    assert request_id in errors[0].getMessage() and "the handler broke" in errors[0].getMessage()
    assert errors[0].exc_info is None
    (traceback,) = tracebacks(caplog.records, logging.DEBUG)
    assert traceback.levelno == logging.DEBUG and request_id in traceback.getMessage()

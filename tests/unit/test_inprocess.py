"""The in-process transport: an app on the shared loop, or driven inline in the caller's thread."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import httpx
import pytest
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from berth.common import asgi
from berth.common.inprocess import InProcessTransport


class ThreadReporter:
    """An app shaped as Berth's are: its handler runs through ``HandlerThreads`` and answers
    which thread it ran on; ``/nested`` first calls ``inner`` inline, ``/thread`` asks from a
    thread the handler starts whether that thread would run work inline."""

    def __init__(self, inner: httpx.Client | None = None) -> None:
        self.threads = asgi.HandlerThreads("test")
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.threads.run(self._handle, scope["path"])
        await response(scope, receive, send)

    def _handle(self, path: str) -> Response:
        answer: dict[str, Any] = {"thread": threading.get_ident()}
        if path == "/nested" and self.inner is not None:
            answer["inner"] = self.inner.get("/").json()
        if path == "/thread":
            seen: list[bool] = []
            started = threading.Thread(target=lambda: seen.append(_would_run_inline()))
            started.start()
            started.join()
            answer["inline_in_started_thread"] = seen[0]
        return JSONResponse(answer)


def _would_run_inline() -> bool:
    ran_on: list[int] = []

    async def probe() -> None:
        await asgi.HandlerThreads("probe", 1).run(lambda: ran_on.append(threading.get_ident()))

    asyncio.run(probe())
    return ran_on[0] == threading.get_ident()


def _client(app: Any, inline: bool) -> httpx.Client:
    return httpx.Client(transport=InProcessTransport(app, inline), base_url="http://app")


def test_inline_runs_the_handler_in_the_callers_thread() -> None:
    with _client(ThreadReporter(), inline=True) as client:
        assert client.get("/").json()["thread"] == threading.get_ident()


def test_on_the_shared_loop_the_handler_runs_on_a_handler_thread() -> None:
    with _client(ThreadReporter(), inline=False) as client:
        assert client.get("/").json()["thread"] != threading.get_ident()


def test_a_handler_driven_inline_may_call_another_app_inline() -> None:
    with (
        _client(ThreadReporter(), inline=True) as inner,
        _client(ThreadReporter(inner), inline=True) as outer,
    ):
        answer = outer.get("/nested").json()
    assert answer["thread"] == answer["inner"]["thread"] == threading.get_ident()


def test_a_thread_the_handler_starts_does_not_run_its_work_inline() -> None:
    with _client(ThreadReporter(), inline=True) as client:
        assert client.get("/thread").json()["inline_in_started_thread"] is False


async def _waits_on_its_loop(scope: Scope, receive: Receive, send: Send) -> None:
    await asyncio.sleep(0)  # yields to its loop once
    await JSONResponse({})(scope, receive, send)


def test_an_app_that_waits_on_its_loop_is_refused_inline_and_served_on_the_shared_loop() -> None:
    with (
        _client(_waits_on_its_loop, inline=True) as client,
        pytest.raises(httpx.RemoteProtocolError, match="needs inline=False"),
    ):
        client.get("/")
    with _client(_waits_on_its_loop, inline=False) as client:
        assert client.get("/").status_code == 200


_SET_BY_APP: contextvars.ContextVar[str] = contextvars.ContextVar("set_by_app", default="unset")


async def _sets_a_context_variable(scope: Scope, receive: Receive, send: Send) -> None:
    _SET_BY_APP.set("by the app")
    await JSONResponse({})(scope, receive, send)


def test_what_an_app_driven_inline_sets_in_its_context_stays_its_own() -> None:
    with _client(_sets_a_context_variable, inline=True) as client:
        assert client.get("/").status_code == 200
    assert _SET_BY_APP.get() == "unset"

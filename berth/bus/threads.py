"""Blocking work for an event loop to await, each piece in a daemon thread of its own.

oslo.messaging retries an unreachable broker forever in places (a server's first connection, a
call's reply queue). A pool's worker stuck there would keep the process from exiting, since
Python waits for its executors' threads at exit; a daemon thread does not.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextlib import suppress
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """``function(*args)`` in a new daemon thread; its outcome, as a future of the running loop.

    Cancelling the future abandons the outcome, not the thread.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            outcome = partial(_set_result, future, function(*args))
        except BaseException as exc:
            outcome = partial(_set_exception, future, exc)
        # A closed loop refuses the outcome: nobody waits for it any more.
        with suppress(RuntimeError):
            loop.call_soon_threadsafe(outcome)

    name = getattr(function, "__qualname__", "work")
    threading.Thread(target=run, name=f"berth-bus {name}", daemon=True).start()
    return future


def _set_result(future: asyncio.Future[T], result: T) -> None:
    if not future.done():
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)

"""Serving one message: find the endpoint's method, run it, and put the outcome into a reply.

Every backend serves messages this way, so a method behaves the same whatever carried its request:
``handle`` for a backend that serves on the event loop, ``handle_in_thread`` for one whose messages
arrive in worker threads of their own.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from berth.bus.errors import NoSuchMethod
from berth.bus.message import (
    Request,
    decode_request,
    encode_error,
    encode_no_such_method,
    encode_result,
)

LOG = logging.getLogger(__name__)

T = TypeVar("T")

# Waits, in a worker thread, for an awaitable run on the bus's event loop.
RunOnLoop = Callable[[Awaitable[T]], T]


def find_method(endpoint: object, name: str) -> Callable[..., Any]:
    """The endpoint's public method ``name``; attributes that are not methods are not callable."""
    if name.startswith("_"):
        raise NoSuchMethod(name)
    method = getattr(endpoint, name, None)
    if method is None or not inspect.isroutine(method):
        raise NoSuchMethod(name)
    return method


async def invoke(method: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Await an ``async def``; run anything else in a worker thread, so it cannot block the loop."""
    if inspect.iscoroutinefunction(method):
        return await method(**kwargs)
    result = await asyncio.to_thread(method, **kwargs)
    # A plain function wrapping a coroutine function (some decorators do) returns an awaitable.
    if inspect.isawaitable(result):
        result = await result
    return result


def invoke_in_thread(
    method: Callable[..., Any], kwargs: dict[str, Any], run_on_loop: RunOnLoop[Any]
) -> Any:
    """``invoke`` from a worker thread: an ``async def`` runs on the loop, the rest right here."""
    if inspect.iscoroutinefunction(method):
        return run_on_loop(method(**kwargs))
    result = method(**kwargs)
    if inspect.isawaitable(result):
        result = run_on_loop(result)
    return result


async def handle(endpoint: object, topic: str, body: str, *, wants_reply: bool) -> str | None:
    """Serve one request; the reply's JSON for a call, None for a cast.

    A method's exception goes back to a caller; after a cast nobody is waiting, so it is logged
    with its traceback, never dropped silently.
    """
    request = decode_request(body)
    method = _method(endpoint, topic, request, wants_reply)
    if method is None:
        return encode_no_such_method(request.method) if wants_reply else None
    try:
        result = await invoke(method, request.kwargs)
    except Exception as exc:
        return _failed(topic, request, exc, wants_reply)
    return _returned(topic, request, result, wants_reply)


def handle_in_thread(
    endpoint: object, topic: str, body: str, *, wants_reply: bool, run_on_loop: RunOnLoop[Any]
) -> str | None:
    """``handle`` in a worker thread; ``async def`` methods go to the loop by ``run_on_loop``."""
    request = decode_request(body)
    method = _method(endpoint, topic, request, wants_reply)
    if method is None:
        return encode_no_such_method(request.method) if wants_reply else None
    try:
        result = invoke_in_thread(method, request.kwargs, run_on_loop)
    except Exception as exc:
        return _failed(topic, request, exc, wants_reply)
    return _returned(topic, request, result, wants_reply)


def _method(
    endpoint: object, topic: str, request: Request, wants_reply: bool
) -> Callable[..., Any] | None:
    try:
        return find_method(endpoint, request.method)
    except NoSuchMethod:
        # Usually a sender newer than its server; the caller of a call hears of it, so only a
        # cast, which nobody will ever answer, is worth an error here.
        LOG.log(
            logging.WARNING if wants_reply else logging.ERROR,
            "%s to %r: %s has no public method %r",
            "call" if wants_reply else "cast",
            topic,
            type(endpoint).__name__,
            request.method,
        )
        return None


def _failed(topic: str, request: Request, exc: Exception, wants_reply: bool) -> str | None:
    if not wants_reply:
        LOG.error("cast %r to %r failed", request.method, topic, exc_info=exc)
        return None
    # The caller gets the error and decides how bad it is; the traceback stays here.
    LOG.debug("call %r to %r raised", request.method, topic, exc_info=exc)
    return encode_error(exc)


def _returned(topic: str, request: Request, result: Any, wants_reply: bool) -> str | None:
    if not wants_reply:
        return None
    try:
        return encode_result(result)
    except (TypeError, ValueError) as exc:
        LOG.error("call %r to %r returned what JSON cannot carry: %s", request.method, topic, exc)
        return encode_error(exc)

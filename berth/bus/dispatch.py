"""Serving one message: find the endpoint's method, run it, and put the outcome into a reply.

Every backend serves messages this way, so a method behaves the same whatever carried its request.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from berth.bus.errors import NoSuchMethod
from berth.bus.message import (
    decode_request,
    encode_error,
    encode_no_such_method,
    encode_result,
)

LOG = logging.getLogger(__name__)


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


async def handle(endpoint: object, topic: str, body: str, *, wants_reply: bool) -> str | None:
    """Serve one request; the reply's JSON for a call, None for a cast.

    A method's exception goes back to a caller; after a cast nobody is waiting, so it is logged
    with its traceback, never dropped silently.
    """
    request = decode_request(body)
    kind = "call" if wants_reply else "cast"
    try:
        method = find_method(endpoint, request.method)
    except NoSuchMethod:
        # Usually a sender newer than its server; the caller of a call hears of it, so only a
        # cast, which nobody will ever answer, is worth an error here.
        level = logging.WARNING if wants_reply else logging.ERROR
        LOG.log(
            level,
            "%s to %r: %s has no public method %r",
            kind,
            topic,
            type(endpoint).__name__,
            request.method,
        )
        return encode_no_such_method(request.method) if wants_reply else None
    try:
        result = await invoke(method, request.kwargs)
    except Exception as exc:
        if not wants_reply:
            LOG.exception("cast %r to %r failed", request.method, topic)
            return None
        # The caller gets the error and decides how bad it is; the traceback stays here.
        LOG.debug("call %r to %r raised", request.method, topic, exc_info=True)
        return encode_error(exc)
    if not wants_reply:
        return None
    try:
        return encode_result(result)
    except (TypeError, ValueError) as exc:
        LOG.error("call %r to %r returned what JSON cannot carry: %s", request.method, topic, exc)
        return encode_error(exc)

"""Reading and parsing a request body, with the limits every Berth API applies to it.

A body is read up to ``MAX_BODY_BYTES`` (past it: ``BodyTooLarge``, which each API answers with
413) and parsed as JSON to at most ``MAX_DEPTH`` levels of arrays and objects (past it, or when
it is not JSON: ``MalformedBody``, a 400). No API's real document comes near either limit; both
keep a hostile body from costing a worker its memory or its stack (a document nested a thousand
levels deep parses, but every recursive walk over it afterwards overflows Python's stack).
Each API turns these errors into its own error document.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

# The largest body any API reads: Placement's largest real bodies (a reshaper batch of the
# network reporter's 500 providers, a POST /allocations of many consumers) are a few hundred KB.
MAX_BODY_BYTES = 4 * 1024 * 1024
# The deepest nesting of arrays and objects in a body; real documents have at most a handful
# (a reshaper body has four), a port's free-form binding profile a few more.
MAX_DEPTH = 32


class BodyTooLarge(Exception):
    """The body is longer than ``MAX_BODY_BYTES``."""

    def __init__(self) -> None:
        super().__init__(f"The request body is larger than the limit of {MAX_BODY_BYTES} bytes.")


class MalformedBody(Exception):
    """The body is not JSON, or is nested deeper than ``MAX_DEPTH``."""


async def read_body(request: Request) -> bytes:
    """The request's body; ``BodyTooLarge`` as soon as it is known to pass the limit (from its
    Content-Length, else while it arrives), so a huge body is never held."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BodyTooLarge()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BodyTooLarge()
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(body: bytes) -> Any:
    """``body`` as JSON, nested at most ``MAX_DEPTH`` deep; ``MalformedBody`` saying why not."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedBody(str(exc)) from None
    if _depth(document) > MAX_DEPTH:
        raise MalformedBody(f"The document is nested deeper than the limit of {MAX_DEPTH} levels.")
    return document


def _depth(document: Any) -> int:
    """How deep arrays and objects nest in ``document`` (0 for a scalar), without recursion."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, dict):
            value = value.values()
        elif not isinstance(value, list):
            continue
        depth += 1
        if depth > MAX_DEPTH:
            return depth
        deepest = max(deepest, depth)
        pending.extend((item, depth) for item in value)
    return deepest

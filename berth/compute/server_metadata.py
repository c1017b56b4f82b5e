"""A server's metadata: string keys and values its owner sets, at create or through
``/servers/{id}/metadata``. The rules, as Nova's: a key is 1 to 255 letters, digits, spaces and
``-_:.``; a value is a string of at most 255 characters. How many items a server may hold is the
project's ``metadata_items`` quota (:func:`berth.compute.quotas.check_metadata_items`).

Pure functions: the store is :mod:`berth.compute.server_records`.
"""

from __future__ import annotations

import re
from typing import Any

from berth.compute import exceptions

KEY = re.compile(r"[a-zA-Z0-9\-_:. ]{1,255}")
VALUE_LENGTH = 255


def parse(value: Any, what: str = "metadata") -> dict[str, str]:
    """A metadata object as a request gives it; BadRequest naming the first bad key or value."""
    if not isinstance(value, dict):
        raise exceptions.BadRequest(f"Invalid input for field '{what}': an object is expected.")
    for key, item in value.items():
        if not KEY.fullmatch(key):
            raise exceptions.BadRequest(
                f"Invalid input for field '{what}': key {key[:300]!r} is not 1 to 255 letters, "
                "digits, spaces or '-_:.'."
            )
        if not isinstance(item, str) or len(item) > VALUE_LENGTH:
            raise exceptions.BadRequest(
                f"Invalid input for field '{what}/{key}': a string of at most {VALUE_LENGTH} "
                "characters."
            )
    return dict(value)


def parse_body(body: Any) -> dict[str, str]:
    """``{"metadata": {...}}``, the body that replaces or merges a server's metadata."""
    if not isinstance(body, dict) or set(body) != {"metadata"}:
        raise exceptions.BadRequest('Invalid input: the body is {"metadata": {...}}.')
    return parse(body["metadata"])


def parse_item(body: Any, key: str) -> str:
    """The value in ``{"meta": {key: value}}``, which names exactly the key of the URL."""
    if not isinstance(body, dict) or set(body) != {"meta"}:
        raise exceptions.BadRequest('Invalid input: the body is {"meta": {key: value}}.')
    item = parse(body["meta"], "meta")
    if len(item) != 1:
        raise exceptions.BadRequest("Invalid input for field 'meta': exactly one item is expected.")
    if key not in item:
        raise exceptions.BadRequest(
            "Request body and URI mismatch: the key differs from the URL's."
        )
    return item[key]

"""Pages of a Compute API list: ``limit`` and ``marker`` (the id of the last item seen), and the
``<collection>_links`` with a ``next`` link when a page came back full::

    GET /v2.1/flavors?limit=2&marker=m1.tiny
    {"flavors": [...two...],
     "flavors_links": [{"rel": "next", "href": ".../v2.1/flavors?limit=2&marker=m1.medium"}]}

The Networking API's helper (``berth.network.api.listing``) pages differently (``page_reverse``,
``previous`` links, its own error type), so the compute API keeps this small one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

from berth.compute import exceptions
from berth.compute.api.request import ComputeRequest

T = TypeVar("T")

# The most items one page holds, whatever ``limit`` says (the reference's osapi_max_limit).
MAX_LIMIT = 1000


@dataclass(frozen=True)
class Page:
    limit: int
    marker: str | None


def parse(req: ComputeRequest) -> Page:
    """Read ``limit`` and ``marker`` from the query; a bad limit is a 400, and 0 (like no
    limit) asks for a page as long as the deployment allows."""
    limit, marker = MAX_LIMIT, None
    for name, value in req.query_items:
        if name == "limit":
            limit = min(_non_negative("limit", value) or MAX_LIMIT, MAX_LIMIT)
        elif name == "marker":
            marker = value
    return Page(limit, marker)


def offset_of(req: ComputeRequest) -> int:
    """The ``offset`` of the lists paged by position instead of marker (server groups)."""
    found = [value for name, value in req.query_items if name == "offset"]
    return _non_negative("offset", found[-1]) if found else 0


def changes_since(req: ComputeRequest) -> dt.datetime | None:
    """``changes-since`` as naive UTC (the stored times'); a value that is no ISO 8601 time is
    a 400."""
    found = [value for name, value in req.query_items if name == "changes-since"]
    if not found:
        return None
    try:
        when = dt.datetime.fromisoformat(found[-1])
    except ValueError:
        raise exceptions.BadRequest(
            f"Invalid input for query parameters changes-since: {found[-1]!r} is not a time."
        ) from None
    if when.tzinfo is not None:
        when = when.astimezone(dt.UTC).replace(tzinfo=None)
    return when


def _non_negative(name: str, value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise exceptions.BadRequest(f"{name} param must be an integer") from None
    if number < 0:
        raise exceptions.BadRequest(f"{name} param must be positive")
    return number


def after_marker(items: Sequence[T], page: Page, key: Callable[[T], str]) -> list[T]:
    """The items after the marker, at most ``limit`` of them; an unknown marker is a 400."""
    start = 0
    if page.marker is not None:
        at = next((i for i, item in enumerate(items) if key(item) == page.marker), None)
        if at is None:
            raise exceptions.BadRequest(f"marker [{page.marker}] not found")
        start = at + 1
    return list(items[start : start + page.limit])


def links(
    req: ComputeRequest, collection: str, shown: Sequence[Any], page: Page, last_id: str | None
) -> dict[str, list[dict[str, str]]]:
    """``{"<collection>_links": [next]}`` when the page is full, else nothing."""
    if not shown or last_id is None or len(shown) < page.limit:
        return {}
    kept = [(name, value) for name, value in req.query_items if name != "marker"]
    if not any(name == "limit" for name, _ in kept):
        kept.append(("limit", str(page.limit)))
    query = urlencode([*kept, ("marker", last_id)])
    return {f"{collection}_links": [{"rel": "next", "href": f"{req.base_url}{req.path}?{query}"}]}

"""Lists as the Networking API gives them: filters, field selection, sorting and pagination.

``GET /v2.0/ports?network_id=a&network_id=b&fields=id&sort_key=name&sort_dir=desc&limit=2``:
repeated filter values are alternatives; an unknown filter attribute is a 400 (the
``filter-validation`` extension); ``sort_key``/``sort_dir`` pair up; pages follow ``marker`` (an
id) and ``page_reverse``, and carry ``<collection>_links`` with ``next`` and ``previous``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from berth.network import exceptions

_PAGING = {"limit", "marker", "page_reverse", "fields", "sort_key", "sort_dir"}
# Sent by some clients on every list; never a filter.
_IGNORED = {"verbose"}

Item = dict[str, Any]


@dataclass(frozen=True)
class ListQuery:
    filters: dict[str, list[str]] = field(default_factory=dict)
    fields: list[str] = field(default_factory=list)
    sorts: list[tuple[str, bool]] = field(default_factory=list)  # (key, ascending)
    limit: int | None = None
    marker: str | None = None
    page_reverse: bool = False
    # What the query said, minus marker and page_reverse: kept in the pagination links.
    kept: list[tuple[str, str]] = field(default_factory=list)


def parse(
    items: Sequence[tuple[str, str]],
    filterable: Collection[str],
    max_limit: int,
    special: Collection[str] = (),
) -> ListQuery:
    """Read the query string; ``special`` filters are the resource's own (e.g. ``fixed_ips``)."""
    filters: dict[str, list[str]] = {}
    keys, dirs, fields = [], [], []
    limit: int | None = None
    marker, reverse = None, False
    for name, value in items:
        if name == "fields":
            fields.append(value)
        elif name == "sort_key":
            keys.append(value)
        elif name == "sort_dir":
            if value not in ("asc", "desc"):
                raise exceptions.BadRequest(f"{value} is an invalid value for sort_dir")
            dirs.append(value == "asc")
        elif name == "limit":
            limit = _limit(value, max_limit)
        elif name == "marker":
            marker = value
        elif name == "page_reverse":
            reverse = _boolean("page_reverse", value)
        elif name in _IGNORED:
            continue
        elif name in filterable or name in special:
            filters.setdefault(name, []).append(value)
        else:
            raise exceptions.BadRequest(f"[{name}] is invalid attribute for filtering")
    if dirs and len(dirs) != len(keys):
        raise exceptions.BadRequest("The number of sort_keys and sort_dirs must be same")
    for key in keys:
        if key not in filterable:
            raise exceptions.BadRequest(f"{key} is an invalid attribute for sort_keys")
    kept = [(n, v) for n, v in items if n not in ("marker", "page_reverse")]
    sorts = list(zip(keys, dirs or [True] * len(keys), strict=True))
    return ListQuery(filters, fields, sorts, limit, marker, reverse, kept)


def _limit(value: str, max_limit: int) -> int | None:
    try:
        limit = int(value)
    except ValueError:
        raise exceptions.BadRequest(f"Bad limit request: '{value}' is not an integer") from None
    if limit < 0:
        raise exceptions.BadRequest(f"Bad limit request: limit must be >= 0, not {limit}")
    # 0 asks for everything there is, which the deployment's maximum still bounds.
    return min(limit, max_limit) if limit else max_limit


def _boolean(name: str, value: str) -> bool:
    lowered = value.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise exceptions.BadRequest(f"'{value}' is not a valid boolean value for {name}")


def matches(value: Any, wanted: list[str]) -> bool:
    """Whether an attribute's value is one of the filter's (string) values."""
    if isinstance(value, bool):
        return any(w.lower() == str(value).lower() for w in wanted)
    if value is None:
        return any(w in ("", "None", "null") for w in wanted)
    if isinstance(value, list):
        return any(str(v) in wanted for v in value)
    return str(value) in wanted


def select(
    items: Sequence[Item],
    query: ListQuery,
    special: dict[str, Callable[[Item, list[str]], bool]] | None = None,
) -> list[Item]:
    """The items every filter keeps."""
    special = special or {}
    kept = []
    for item in items:
        ok = True
        for name, wanted in query.filters.items():
            test = special.get(name)
            if not (test(item, wanted) if test else matches(item.get(name), wanted)):
                ok = False
                break
        if ok:
            kept.append(item)
    return kept


def page(
    items: Sequence[Item],
    query: ListQuery,
    collection: str,
    base_url: str,
    path: str,
    unlisted_marker: Item | None = None,
    key: str = "id",
) -> dict[str, Any]:
    """The list document: sorted, paged, trimmed to ``fields``, with links when paged.
    ``unlisted_marker`` is the marker's own item where it may exist outside ``items`` (one the
    caller does not see): it only places the page, as upstream does for such a marker. ``key``
    names the attribute a marker is (a network's IP availability has ``network_id``)."""
    marker_unlisted = (
        unlisted_marker is not None
        and unlisted_marker.get(key) == query.marker
        and all(item.get(key) != query.marker for item in items)
    )
    with_marker = [*items, unlisted_marker] if unlisted_marker and marker_unlisted else items
    ordered = _sorted(with_marker, query.sorts)
    start, end = 0, len(ordered)
    if query.marker is not None:
        at = next((i for i, item in enumerate(ordered) if item.get(key) == query.marker), None)
        if at is None:
            raise exceptions.BadRequest(f"marker {query.marker} not found")
        if marker_unlisted:
            del ordered[at]
            start, end = (0, at) if query.page_reverse else (at, len(ordered))
        elif query.page_reverse:
            end = at
        else:
            start = at + 1
    if query.limit is not None:
        if query.page_reverse:
            start = max(start, end - query.limit)
        else:
            end = min(end, start + query.limit)
    shown = ordered[start:end]
    body: dict[str, Any] = {collection: [trim(item, query.fields) for item in shown]}
    if query.limit is not None:
        links = []
        # As upstream, a full page links on in the direction of travel even when nothing
        # follows: that page comes back empty, and clients page until one comes back short.
        # An empty page past the end links back to the last page (past the start: the first).
        full, forward = len(shown) == query.limit, not query.page_reverse
        passed_end = not shown and query.marker is not None
        first = shown[0][key] if shown else None
        last = shown[-1][key] if shown else None
        if (shown and (end < len(ordered) or (full and forward))) or (passed_end and not forward):
            links.append(_link(base_url, path, query, last, "next", reverse=False))
        if (shown and (start > 0 or (full and not forward))) or (passed_end and forward):
            links.append(_link(base_url, path, query, first, "previous", reverse=True))
        if links:
            body[f"{collection}_links"] = links
    return body


def trim(item: Item, fields: Sequence[str]) -> Item:
    if not fields:
        return item
    return {name: item[name] for name in fields if name in item}


def _sorted(items: Sequence[Item], sorts: Sequence[tuple[str, bool]]) -> list[Item]:
    ordered = sorted(items, key=lambda item: str(item.get("id")))
    # Stable sorts from the least significant key up give the combined order; None sorts first.
    for key, ascending in reversed(sorts):
        ordered.sort(
            key=lambda item: (item.get(key) is not None, _comparable(item.get(key))),
            reverse=not ascending,
        )
    return ordered


def _comparable(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _link(
    base_url: str, path: str, query: ListQuery, marker: str | None, rel: str, *, reverse: bool
) -> dict[str, str]:
    """A link to the page after ``marker`` (before it when ``reverse``); without a marker, to
    the first page (the last one when ``reverse``)."""
    params = [*query.kept, *([("marker", marker)] if marker is not None else [])]
    if reverse:
        params.append(("page_reverse", "True"))
    return {"href": f"{base_url}{path}?{urlencode(params)}", "rel": rel}

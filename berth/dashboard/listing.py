"""Filtering, sorting and paging the host rows, so a page of a thousand-host fleet costs the
browser one small answer. Pure: parse a query string into a :class:`HostQuery`, then
:func:`select` a :class:`Page` of rows."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from berth.dashboard.fleet import HostRow, totals

DEFAULT_PER_PAGE = 50
MAX_PER_PAGE = 500
MAX_TEXT = 255

SortKey = Callable[[HostRow], Any]
# What ``sort`` may name; a leading ``-`` sorts from the largest. Shares are used / capacity.
SORTS: Mapping[str, SortKey] = {
    "host": lambda row: row.node.host,
    "cell": lambda row: row.node.cell,
    "servers": lambda row: row.servers,
    "vcpu": lambda row: _share(row, "VCPU"),
    "memory": lambda row: _share(row, "MEMORY_MB"),
    "disk": lambda row: _share(row, "DISK_GB"),
    "bandwidth": HostRow.bandwidth_share,
    "packet_rate": HostRow.packet_rate_share,
}
_KNOWN = frozenset({"cell", "aggregate", "physnet", "q", "sort", "page", "per_page"})


def _share(row: HostRow, rc: str) -> float:
    amount = row.compute.get(rc)
    return 0.0 if amount is None else amount.share


class BadQuery(ValueError):
    """The query string asks for something the listing does not know (a 400)."""


@dataclass(frozen=True, slots=True)
class HostQuery:
    cell: str | None = None
    aggregate: str | None = None
    physnet: str | None = None
    # A case-insensitive piece of the host's or its node's name.
    text: str | None = None
    sort: str = "host"
    descending: bool = False
    page: int = 1
    per_page: int = DEFAULT_PER_PAGE

    @classmethod
    def parse(cls, items: Sequence[tuple[str, str]]) -> HostQuery:
        values: dict[str, str] = {}
        for key, value in items:
            if key not in _KNOWN:
                raise BadQuery(
                    f"Unknown query parameter {key!r}; known: {', '.join(sorted(_KNOWN))}."
                )
            if key in values:
                raise BadQuery(f"Query parameter {key!r} is given more than once.")
            if len(value) > MAX_TEXT:
                raise BadQuery(f"Query parameter {key!r} is longer than {MAX_TEXT} characters.")
            values[key] = value
        sort = values.get("sort") or "host"
        descending = sort.startswith("-")
        sort = sort.removeprefix("-")
        if sort not in SORTS:
            raise BadQuery(f"Cannot sort by {sort!r}; by one of: {', '.join(SORTS)}.")
        return cls(
            cell=values.get("cell") or None,
            aggregate=values.get("aggregate") or None,
            physnet=(values.get("physnet") or "").lower() or None,
            text=(values.get("q") or "").strip().lower() or None,
            sort=sort,
            descending=descending,
            page=_positive(values, "page", 1, None),
            per_page=_positive(values, "per_page", DEFAULT_PER_PAGE, MAX_PER_PAGE),
        )

    def keeps(self, row: HostRow) -> bool:
        if self.cell is not None and row.node.cell != self.cell:
            return False
        if self.aggregate is not None and self.aggregate not in row.aggregates:
            return False
        if self.physnet is not None and self.physnet not in row.physnets:
            return False
        return self.text is None or any(
            self.text in name.lower() for name in (row.node.host, row.node.hypervisor_hostname)
        )


def _positive(values: Mapping[str, str], key: str, default: int, ceiling: int | None) -> int:
    text = values.get(key)
    if not text:
        return default
    try:
        number = int(text)
    except ValueError:
        raise BadQuery(f"Query parameter {key!r} must be a whole number, not {text!r}.") from None
    if number < 1 or (ceiling is not None and number > ceiling):
        limit = f"1 to {ceiling}" if ceiling is not None else "1 or more"
        raise BadQuery(f"Query parameter {key!r} must be {limit}, not {number}.")
    return number


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[HostRow]
    # Hosts the filters kept (over every page), and their amounts summed.
    matched: int
    pages: int
    query: HostQuery
    totals: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "hosts": [row.to_json() for row in self.rows],
            "total": self.matched,
            "page": self.query.page,
            "per_page": self.query.per_page,
            "pages": self.pages,
            "sort": ("-" if self.query.descending else "") + self.query.sort,
            "totals": {rc: amount.to_json() for rc, amount in self.totals.items()},
        }


def select(rows: Sequence[HostRow], query: HostQuery) -> Page:
    """The page ``query`` asks for of the rows it keeps, in its order (ties by host name, so
    pages do not overlap). A page past the last is empty, not an error."""
    kept = [row for row in rows if query.keeps(row)]
    # Two stable sorts: by name, then by the key, so equal keys stay in name order either way.
    kept.sort(key=SORTS["host"])
    if query.sort != "host" or query.descending:
        kept.sort(key=SORTS[query.sort], reverse=query.descending)
    start = (query.page - 1) * query.per_page
    pages = max(1, -(-len(kept) // query.per_page))
    return Page(kept[start : start + query.per_page], len(kept), pages, query, totals(kept))

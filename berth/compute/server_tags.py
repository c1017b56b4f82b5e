"""Server tags (microversion 2.26): short strings a server's owner attaches to it, to find the
server by them later (``GET /servers?tags=...``). The rules, as Nova's: at most 50 tags per
server, each 1 to 60 characters without ``/`` or ``,`` (a comma separates them in a filter, a
slash would end the URL segment that names one).

Pure functions: the store is :mod:`berth.compute.server_records`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any

from berth.compute import exceptions

MAX_TAGS = 50
MAX_LENGTH = 60
_FORBIDDEN = frozenset("/,")


def parse_tag(value: Any, what: str = "tag") -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_LENGTH:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': a string of 1 to {MAX_LENGTH} characters."
        )
    if _FORBIDDEN & set(value):
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': {value!r} holds a '/' or a ','."
        )
    return value


def parse_tags(value: Any, what: str = "tags") -> list[str]:
    """A list of at most :data:`MAX_TAGS` tags, each kept once, in the order given."""
    if not isinstance(value, list):
        raise exceptions.BadRequest(f"Invalid input for field '{what}': a list is expected.")
    if len(value) > MAX_TAGS:
        raise exceptions.BadRequest(
            f"Invalid input for field '{what}': at most {MAX_TAGS} tags per server."
        )
    return list(dict.fromkeys(parse_tag(tag, what) for tag in value))


def check_room(tags: Collection[str]) -> None:
    """A server with ``tags`` may hold them (one more tag would exceed the limit)."""
    if len(tags) > MAX_TAGS:
        raise exceptions.BadRequest(f"The number of tags exceeded the per-server limit {MAX_TAGS}.")


@dataclass(frozen=True)
class TagFilter:
    """A server list's tag filters, each a set of tags: ``tags`` (the server has all of them),
    ``tags-any`` (at least one), ``not-tags`` (not all of them), ``not-tags-any`` (none)."""

    all_of: frozenset[str] = frozenset()
    any_of: frozenset[str] = frozenset()
    not_all_of: frozenset[str] = frozenset()
    not_any_of: frozenset[str] = frozenset()

    @classmethod
    def from_query(cls, last: dict[str, str]) -> TagFilter:
        """From the query parameters by name (their last values), each tags comma-separated."""

        def tags(name: str) -> frozenset[str]:
            return frozenset(tag for tag in last.get(name, "").split(",") if tag)

        return cls(tags("tags"), tags("tags-any"), tags("not-tags"), tags("not-tags-any"))

    def matches(self, tags: Iterable[str]) -> bool:
        have = frozenset(tags)
        return (
            self.all_of <= have
            and (not self.any_of or bool(self.any_of & have))
            and (not self.not_all_of or not self.not_all_of <= have)
            and not self.not_any_of & have
        )

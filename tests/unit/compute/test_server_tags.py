"""Server tags' rules and the list filters over them."""

from __future__ import annotations

import pytest

from berth.compute import exceptions
from berth.compute.server_tags import MAX_TAGS, TagFilter, check_room, parse_tag, parse_tags


@pytest.mark.parametrize("tag", ["", "t" * 61, "a/b", "a,b", 7, None])
def test_a_bad_tag_is_refused(tag: object) -> None:
    with pytest.raises(exceptions.BadRequest):
        parse_tag(tag)


def test_tags_are_kept_once_in_order() -> None:
    assert parse_tags(["b", "a", "b", "t" * 60]) == ["b", "a", "t" * 60]


@pytest.mark.parametrize("tags", ["a", [f"t{n}" for n in range(MAX_TAGS + 1)], ["ok", ""]])
def test_bad_tag_lists_are_refused(tags: object) -> None:
    with pytest.raises(exceptions.BadRequest):
        parse_tags(tags)


def test_room_for_fifty_tags_only() -> None:
    check_room([f"t{n}" for n in range(MAX_TAGS)])
    with pytest.raises(exceptions.BadRequest):
        check_room([f"t{n}" for n in range(MAX_TAGS + 1)])


@pytest.mark.parametrize(
    ("query", "matching"),
    [
        ({}, {"ab", "a", "c", "none"}),
        ({"tags": "a,b"}, {"ab"}),
        ({"tags": "a"}, {"ab", "a"}),
        ({"tags-any": "b,c"}, {"ab", "c"}),
        ({"not-tags": "a,b"}, {"a", "c", "none"}),
        ({"not-tags-any": "a,c"}, {"none"}),
        ({"tags": "a", "not-tags-any": "b"}, {"a"}),
        ({"tags": ",,"}, {"ab", "a", "c", "none"}),
        ({"name": "ignored"}, {"ab", "a", "c", "none"}),
    ],
)
def test_filters(query: dict[str, str], matching: set[str]) -> None:
    servers = {"ab": ["a", "b"], "a": ["a"], "c": ["c"], "none": []}
    chosen = TagFilter.from_query(query)
    assert {name for name, tags in servers.items() if chosen.matches(tags)} == matching

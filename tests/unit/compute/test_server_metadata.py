"""Server metadata's rules: keys, values and the one-item body of a key's URL."""

from __future__ import annotations

from typing import Any

import pytest

from berth.compute import exceptions
from berth.compute.server_metadata import parse, parse_body, parse_item


def test_keys_of_nova_s_characters_and_values_up_to_255() -> None:
    given = {"k" * 255: "v" * 255, "a-b_c:d.e f": "", "K9": "x"}
    assert parse(given) == given


@pytest.mark.parametrize(
    "metadata", [{"": "v"}, {"k" * 256: "v"}, {"a/b": "v"}, {"k": "v" * 256}, {"k": 1}, ["k"]]
)
def test_bad_metadata_is_refused(metadata: Any) -> None:
    with pytest.raises(exceptions.BadRequest):
        parse(metadata)


def test_the_body_holds_metadata_only() -> None:
    assert parse_body({"metadata": {"a": "b"}}) == {"a": "b"}
    for body in ({"meta1": "data1"}, {"metadata": {}, "other": 1}, [], None):
        with pytest.raises(exceptions.BadRequest):
            parse_body(body)


def test_an_item_names_the_url_s_key_only() -> None:
    assert parse_item({"meta": {"key": "value"}}, "key") == "value"
    for body in (
        {"meta": {"testkey": "testvalue"}},
        {"meta": {"key": "1", "other": "2"}},
        {"meta": {}},
        {"metadata": {"key": "value"}},
    ):
        with pytest.raises(exceptions.BadRequest):
            parse_item(body, "key")

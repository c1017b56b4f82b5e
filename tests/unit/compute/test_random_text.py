"""Random passwords and reservation ids: their length, their alphabet, no character likelier."""

from __future__ import annotations

import collections
import string

from berth.compute.server_input import random_text


def test_random_text_is_as_long_as_asked_and_of_its_alphabet() -> None:
    alphabet = string.ascii_letters + string.digits
    for length in (1, 8, 12, 100):
        text = random_text(alphabet, length)
        assert len(text) == length and set(text) <= set(alphabet)


def test_no_character_is_likelier_than_another() -> None:
    """60,000 draws of three characters: each about a third (within 3.5 standard deviations,
    115 draws each)."""
    counts = collections.Counter("".join(random_text("abc", 60) for _ in range(1000)))
    assert set(counts) == {"a", "b", "c"}
    assert all(abs(n - 20_000) < 400 for n in counts.values())

"""Reads kept across requests (berth.network.recall): found by their key, the least recently
used forgotten first, and dropped when their revisions changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from berth.common.db import Database
from berth.network import recall

REVISIONS = frozenset({("network", "net-a", 1)})


def test_kept_reads_are_found_by_key_and_the_least_recently_used_go_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall, "_PER_DATABASE", 2)
    db = Database(f"sqlite:///{tmp_path / 'recall.db'}")
    for key in (("a",), ("b",)):
        recall.keep(db, key, REVISIONS)
    found = recall.find(db, ("a",))
    assert found is not None and found.revisions == REVISIONS
    recall.keep(db, ("c",), REVISIONS)  # "b" was used least recently
    assert recall.find(db, ("b",)) is None
    assert recall.find(db, ("a",)) is not None and recall.find(db, ("c",)) is not None
    recall.drop(db, ("a",))
    assert recall.find(db, ("a",)) is None
    # Another database (another URL, or the same opened again) keeps its own.
    other = Database(f"sqlite:///{tmp_path / 'recall.db'}")
    assert recall.find(other, ("c",)) is None
    db.dispose()
    other.dispose()

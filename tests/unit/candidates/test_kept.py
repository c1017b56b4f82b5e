"""Texts kept per row: made once, made again after their row changes, bounded in number."""

from __future__ import annotations

import numpy as np

from berth.placement.candidates.kept import KeptTexts, Rows


class _Maker:
    def __init__(self) -> None:
        self.made: list[list[int]] = []
        self.edition = 0

    def __call__(self, rows: Rows) -> list[str]:
        self.made.append(rows.tolist())
        return [f"{row}.{self.edition}" for row in rows.tolist()]


def _rows(*rows: int) -> Rows:
    return np.asarray(rows, np.int64)


def test_a_row_is_made_once_until_it_is_forgotten() -> None:
    kept, make = KeptTexts(most=10), _Maker()
    assert kept.get("f", _rows(3, 1), 4, make) == ["3.0", "1.0"]
    make.edition = 1
    assert kept.get("f", _rows(1, 2, 3), 4, make) == ["1.0", "2.1", "3.0"]
    assert make.made == [[1, 3], [2]]
    kept.forget([3, 7])
    assert kept.get("f", _rows(3, 2), 4, make) == ["3.1", "2.1"]
    assert make.made[-1] == [3]
    assert len(kept) == 3


def test_forms_are_kept_apart_and_rows_may_grow() -> None:
    kept, make = KeptTexts(most=10), _Maker()
    kept.get("a", _rows(0), 1, make)
    make.edition = 1
    assert kept.get("b", _rows(0), 1, make) == ["0.1"]
    assert kept.get("a", _rows(0, 5), 6, make) == ["0.0", "5.1"]
    kept.forget([0])
    assert len(kept) == 1


def test_past_the_most_every_text_is_forgotten() -> None:
    kept, make = KeptTexts(most=3), _Maker()
    kept.get("f", _rows(0, 1), 9, make)
    make.edition = 1
    assert kept.get("f", _rows(1, 2, 3), 9, make) == ["1.1", "2.1", "3.1"]
    assert make.made[-1] == [1, 2, 3]
    assert len(kept) == 3

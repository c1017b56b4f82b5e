"""Rendered pieces of JSON text kept per row, so a query renders only the rows that changed.

Queries mostly show the providers the last ones did (the same flavor asked again and again, a
claim changing one tree in between). Each form of piece (a provider summary at some
microversion, an item of the provider list) has a column of texts by row and a column saying
which are there, so a query gathers its rows' texts and finds the missing ones with two array
lookups rather than a dict lookup per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
T = TypeVar("T", str, bytes)


class KeptTexts:
    """Texts by form and row, at most ``most`` in all (past that, all are forgotten)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._texts: dict[object, npt.NDArray[np.object_]] = {}
        self._have: dict[object, npt.NDArray[np.bool_]] = {}
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def clear(self) -> None:
        self._texts.clear()
        self._have.clear()
        self._count = 0

    def forget(self, rows: Iterable[int]) -> None:
        """Forget every form of ``rows`` (they changed)."""
        at = np.fromiter(rows, np.int64)
        for form, have in self._have.items():
            inside = at[at < len(have)]
            held = inside[have[inside]]
            if len(held):
                have[held] = False
                self._texts[form][held] = None
                self._count -= len(held)

    def get(self, form: object, rows: Rows, size: int, make: Callable[[Rows], list[T]]) -> list[T]:
        """The texts of ``rows`` in ``form``; ``make(rows)`` renders those not kept (``size``
        is the number of rows the index has)."""
        texts, have = self._column(form, size)
        missing = rows[~have[rows]]
        if len(missing):
            missing = np.unique(missing)
            if self._count + len(missing) > self.most:
                self.clear()
                texts, have = self._column(form, size)
                missing = np.unique(rows)
            made = np.empty(len(missing), dtype=object)
            made[:] = make(missing)
            texts[missing] = made
            have[missing] = True
            self._count += len(missing)
        return texts[rows].tolist()  # type: ignore[no-any-return]

    def _column(
        self, form: object, size: int
    ) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.bool_]]:
        texts = self._texts.get(form)
        if texts is None or len(texts) < size:
            grown = np.empty(size, dtype=object)
            have = np.zeros(size, np.bool_)
            if texts is not None:
                grown[: len(texts)] = texts
                have[: len(texts)] = self._have[form]
            self._texts[form], self._have[form] = grown, have
        return self._texts[form], self._have[form]

"""What the compute stores refuse; the API maps each to its own answer (409, mostly)."""

from __future__ import annotations


class Duplicate(Exception):
    """A row with this unique key exists already: ``what`` names the key (``"flavor id"``)."""

    def __init__(self, what: str, value: object) -> None:
        super().__init__(f"{what} {value!r} exists already")
        self.what = what
        self.value = value


class InUse(Exception):
    """The row is still referenced (a cell with hosts or instances mapped to it)."""

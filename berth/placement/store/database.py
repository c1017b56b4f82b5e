"""The placement database: a ``Database`` whose write transactions publish their changes."""

from __future__ import annotations

from berth.common.db import Database
from berth.placement.store.changes import ChangeLog


def open_database(url: str) -> Database:
    return Database(url, write_hooks=[ChangeLog()])

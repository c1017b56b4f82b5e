"""Reads of networks kept across requests, recalled while their revisions hold.

A port's create and binding, and a network's show, read the same network over and over: its row
and the grants sharing it, its segments and subnets, the rules of its QoS policy. Every change to
those bumps a revision or adds or removes a row (``store.networks.revisions``), revisions only
grow and ids are never reused: the same revisions mean nothing read has changed. So what a
request read (``remembered.kept``) is kept here with the revisions it was read at, by what the
reads depend on, and a later request whose revisions are the same recalls it into its own
memory (``remembered.recall``) instead of reading it. Who recalls checks the revisions: before
it reads (a network's show) or first in its write, forgetting what it recalled if they changed
(``read_ahead``).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.network.store import networks as network_store
from berth.network.store.remembered import kept, recall

Key = tuple[Any, ...]
# What the kept reads of one database may take, the least recently used going first.
_PER_DATABASE = 256


@dataclass(frozen=True, slots=True)
class Kept:
    """What a request read (``remembered.kept``), and the revisions it read it at."""

    revisions: network_store.Revisions
    reads: Mapping[Key, Any]


_KEPT: weakref.WeakKeyDictionary[Database, OrderedDict[Key, Kept]] = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def find(db: Database, key: Key) -> Kept | None:
    """What was kept for ``key``, if anything."""
    with _GUARD:
        found = _KEPT.get(db, OrderedDict()).get(key)
        if found is not None:
            _KEPT[db].move_to_end(key)
    return found


def keep(db: Database, key: Key, revisions: network_store.Revisions) -> None:
    """Keep what this request's scope has read, read at ``revisions``."""
    with _GUARD:
        found = _KEPT.setdefault(db, OrderedDict())
        found[key] = Kept(revisions, kept())
        found.move_to_end(key)
        if len(found) > _PER_DATABASE:
            found.popitem(last=False)


def drop(db: Database, key: Key) -> None:
    """Forget what was kept for ``key`` (its revisions changed)."""
    with _GUARD:
        _KEPT.get(db, OrderedDict()).pop(key, None)


@contextmanager
def recalling(
    db: Database, conn: Connection, key: Key, network_ids: Collection[str]
) -> Iterator[None]:
    """Within a read transaction: recall what was kept for ``key`` if the networks' revisions
    are those it was read at, and keep what the block read otherwise (unless it raises)."""
    revisions = network_store.revisions(conn, network_ids, ())
    found = find(db, key)
    if found is not None and found.revisions == revisions:
        recall(found.reads)
        yield
        return
    yield
    keep(db, key, revisions)

"""One worker's candidate index, kept current from the change sequence.

Before each query the worker reads the sequence number and what was logged after its own (one
small query; after a refresh that found nothing new, first only the number, outside a
snapshot). If it moved, the providers logged since are read again and applied (only usage and
generation for those that only claims changed); some changes (new resource classes or traits,
bulk loads, a log pruned past this worker, many dead rows) rebuild the index instead. Reading the
number, the log and the providers happens in one snapshot, so the index always matches some
committed state no older than the last write that answered: read-your-writes across workers.
The index only ever proposes; claims are decided by the database.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.placement.candidates.index import NeedsRebuild, ProviderIndex
from berth.placement.candidates.loading import (
    load_index,
    load_names,
    load_providers,
    load_usage,
)
from berth.placement.store import changes

LOG = logging.getLogger(__name__)

# Above this share of changed providers a rebuild is cheaper than reading them one batch at a time.
_REBUILD_SHARE = 0.2


class IndexMismatch(AssertionError):
    """The updated index differs from one rebuilt from the database (``verify_index``)."""


class LiveIndex:
    def __init__(self, db: Database, *, verify: bool = False) -> None:
        self.db = db
        self.verify = verify
        self._lock = threading.Lock()
        self._index: ProviderIndex | None = None
        self._seen = -1
        # Refreshes begun, and the number of the last one that completed: a query may skip its
        # own refresh when one that began after the query arrived has completed since.
        self._begun = 0
        self._completed = 0
        # Whether the last refresh found nothing new: then the next one first only peeks at
        # the sequence (``_moved``); while writes keep coming it goes straight to the snapshot.
        self._quiet = False
        # How the index has been brought up to date so far (for operators and tests).
        self.rebuilds = 0
        self.updates = 0

    @contextmanager
    def current(self) -> Iterator[ProviderIndex]:
        """The index as of now, held (against other threads' updates) while the caller reads.

        Queries that queue here while another thread refreshes share the next refresh: one
        that began after they arrived has seen every write that answered before they did.
        """
        arrived = self._begun
        with self._lock:
            if self._completed <= arrived or self._index is None:
                self._refresh()
            yield self._require()

    def refresh(self) -> None:
        """Bring the index up to date (a worker does this at start, before its first request)."""
        with self._lock:
            self._refresh()

    def _refresh(self) -> None:
        self._begun += 1
        number = self._begun
        self._refresh_once()
        self._completed = number

    def _refresh_once(self) -> None:
        if self._index is not None and self._quiet and not self._moved():
            return
        with self.db.snapshot() as conn:
            if self._index is None:
                self._rebuild(conn, changes.current(conn))
            else:
                found = changes.since(conn, self._seen)
                self._quiet = found.upto == self._seen
                if self._quiet:
                    return
                self._catch_up(self._index, conn, found)
            if self.verify:
                _compare(self._require(), load_index(conn))

    def _moved(self) -> bool:
        """Whether the sequence moved past this index's number: one statement outside a
        snapshot (half a snapshot's CPU on SQLite; on PostgreSQL one round trip instead of
        BEGIN, query and COMMIT). Every write that answered before this query arrived has
        committed its number by now, so an unmoved sequence means the index holds them all;
        a moved one is read again, log and providers, in one snapshot."""
        with self.db.one_statement() as conn:
            moved = changes.current(conn) != self._seen
        self._quiet = not moved
        return moved

    def _require(self) -> ProviderIndex:
        assert self._index is not None
        return self._index

    def _catch_up(self, index: ProviderIndex, conn: Connection, found: changes.Changes) -> None:
        if found.names and not found.everything:
            found = self._new_names(index, conn, found)
        try:
            updated = not found.everything and self._update(index, conn, found)
        except Exception:
            # Half applied: the next query starts again from the database.
            self._index = None
            raise
        if updated:
            self._seen = found.upto
            self.updates += 1
        else:
            self._rebuild(conn, found.upto)

    def _rebuild(self, conn: Connection, upto: int) -> None:
        started = time.perf_counter()
        self._index = load_index(conn)
        self._seen = upto
        self.rebuilds += 1
        # The index lives until the next rebuild: keep the collector from walking it.
        # Unfreeze first, so garbage frozen by the last rebuild is collected now.
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        LOG.info(
            "candidate index rebuilt: %d providers in %.2f s",
            len(self._index.row_of),
            time.perf_counter() - started,
        )

    @staticmethod
    def _new_names(
        index: ProviderIndex, conn: Connection, found: changes.Changes
    ) -> changes.Changes:
        """Take in new resource classes and traits. A class or trait can only be deleted when no
        provider uses it; a renamed class in use needs a rebuild (``everything``)."""
        classes, traits = load_names(conn)
        if not set(index.columns) <= set(classes):
            return dataclasses.replace(found, everything=True)
        index.set_names(classes, traits)
        return found

    def _update(self, index: ProviderIndex, conn: Connection, found: changes.Changes) -> bool:
        """Apply the changed providers; False when a rebuild is the better (or only) way."""
        if len(found.providers) + len(found.usage) > _REBUILD_SHARE * max(len(index.row_of), 1000):
            return False
        if index.dead > max(1000, index.size // 4):
            return False
        claimed = load_usage(conn, found.usage)
        # A provider can only vanish by a logged whole-provider change, but should one be
        # missing, reading it whole finds it gone.
        vanished = found.usage - {usage.id for usage in claimed}
        fresh = load_providers(conn, found.providers | vanished)
        # By uuid, not id: SQLite may give a deleted provider's id to the next one made.
        present = {p.uuid for p in fresh}
        gone = [
            index.uuids[row]
            for row in map(index.row_of_id, found.providers)
            if row is not None and index.uuids[row] not in present
        ]
        try:
            if fresh or gone:
                index.apply(fresh, gone)
        except NeedsRebuild:
            return False
        index.apply_usage(claimed)
        return True


def _compare(kept: ProviderIndex, rebuilt: ProviderIndex) -> None:
    if kept.resource_classes != rebuilt.resource_classes or kept.trait_rank != rebuilt.trait_rank:
        raise IndexMismatch("resource class or trait names differ")
    ours, theirs = kept.providers(), rebuilt.providers()
    if ours != theirs:
        differing = [a.uuid for a, b in zip(ours, theirs, strict=False) if a != b]
        raise IndexMismatch(
            f"index has {len(ours)} providers, database {len(theirs)}; differing: {differing[:5]}"
        )

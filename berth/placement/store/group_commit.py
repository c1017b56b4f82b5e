"""Group commit: allocation writes that arrive together in one worker share one transaction.

Under load most of a claim's cost is the transaction around it (begin, locking the providers,
reading their stock, inserting, logging the change, commit), not the claim itself. Writers queue
here; the first becomes the leader and writes every queued request's claims in one transaction,
as ``POST /allocations`` would write them, then hands the lead to the next waiter. Nobody waits
for a batch to fill: a request that finds no writer busy is written at once, alone.

A batch that fails for any reason (a claim that does not fit, a consumer generation conflict) is
not retried as a whole: each of its requests is then written alone, so every request gets
exactly the answer it would have had by itself, and one refusal costs the others only time.
Two requests naming the same consumer never share a batch.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from berth.common.db import Database
from berth.placement.store import allocations
from berth.placement.store.allocations import Claim

# At most this many requests per transaction, so one batch holds its provider locks briefly.
MAX_BATCH = 32


@dataclass(eq=False)
class _Request:
    claims: Sequence[Claim]
    # Set when the request has been written (``error`` tells how) or made the next leader.
    wake: threading.Event = field(default_factory=threading.Event)
    written: bool = False
    error: BaseException | None = None

    def finish(self, error: BaseException | None = None) -> None:
        self.error = error
        self.written = True
        self.wake.set()


class GroupCommit:
    """One worker's allocation writer (see the module docstring)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._queue: list[_Request] = []
        self._leading = False
        # How requests were written (for operators and tests).
        self.batches = 0
        self.batched_requests = 0

    def write(self, claims: Sequence[Claim]) -> None:
        """Write these claims, all or none, raising what ``allocations.write`` raises."""
        request = _Request(claims)
        with self._lock:
            self._queue.append(request)
            lead = not self._leading
            self._leading = True
        if not lead:
            request.wake.wait()
        if not request.written:
            self._lead()
        if request.error is not None:
            raise request.error

    def _lead(self) -> None:
        """Write the queue's first requests (this thread's among them), then pass the lead on."""
        with self._lock:
            batch = self._queue[:MAX_BATCH]
            del self._queue[:MAX_BATCH]
        try:
            self._write(batch)
        finally:
            for request in batch:
                if not request.written:
                    request.finish(RuntimeError("the group commit leader failed"))
            with self._lock:
                if self._queue:
                    self._queue[0].wake.set()
                else:
                    self._leading = False

    def _write(self, batch: list[_Request]) -> None:
        if len(batch) > 1 and _distinct_consumers(batch) and self._together(batch):
            return
        for request in batch:
            try:
                self._transaction(request.claims)
            except Exception as exc:
                request.finish(exc)
            else:
                request.finish()

    def _together(self, batch: list[_Request]) -> bool:
        """Write the whole batch in one transaction; False (nothing written) if it failed."""
        try:
            self._transaction([claim for request in batch for claim in request.claims])
        except Exception:  # each request then learns its own answer alone
            return False
        self.batches += 1
        self.batched_requests += len(batch)
        for request in batch:
            request.finish()
        return True

    def _transaction(self, claims: Sequence[Claim]) -> None:
        # Claims lock their providers and wait, so only a deadlock the database reports is
        # worth trying again.
        self.db.write_with_retry(lambda conn: allocations.write(conn, claims))


def _distinct_consumers(batch: list[_Request]) -> bool:
    uuids = [claim.consumer_uuid for request in batch for claim in request.claims]
    return len(uuids) == len(set(uuids))

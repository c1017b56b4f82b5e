"""The Placement reporter: keeps Placement showing the network database's agents and segments.

Woken by every write that may change them (``NetworkService.changed``) and every ``interval``
seconds anyway (a Placement that was down, a compute node that appeared), it reads the state,
computes what Placement must show (``reporting``) and applies it (``placement_sync``). Each agent's
``resources_synced`` tells the operator whether its host is in sync.
"""

from __future__ import annotations

import logging
import threading

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.network import reporting
from berth.network.model import Agent
from berth.network.placement_sync import PlacementSync, PlacementUnavailable, SyncReport
from berth.network.reporting import SegmentState
from berth.network.store import agents as agent_store
from berth.network.store import reporting as store

LOG = logging.getLogger(__name__)


class PlacementReporter:
    def __init__(
        self, db: Database, sync: PlacementSync, interval: float = 60.0, agent_down_time: int = 75
    ) -> None:
        self.db = db
        # Dead agents keep their providers (their allocations stay); only binding cares.
        self.agent_down_time = agent_down_time
        self.sync = sync
        self.interval = interval
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # What the database holds of the sync's applied providers (read at the first pass).
        self._recorded: dict[str, tuple[str, int]] | None = None
        # The agents and segments of the last pass that left every host in sync.
        self._in_sync: tuple[list[Agent], list[SegmentState]] | None = None

    def run_once(self) -> SyncReport:
        """One full pass, now (tests and the all-in-one start call this directly)."""
        with self._lock:
            with self.db.read() as conn:
                agents = agent_store.agent_models(conn, utcnow(), self.agent_down_time)
                segments = store.segment_states(conn)
                if self._recorded is None:
                    self._recorded = store.synced_providers(conn)
                    self.sync.remember(self._recorded)
            if self._in_sync == (agents, segments):
                # Nothing Placement is to show changed (a heartbeat, a port on an unrouted
                # network): a thousand hosts' providers need not be worked out again.
                return SyncReport()
            report = self.sync.apply(reporting.desired(agents, segments))
            hosts = {agent.host for agent in agents}
            applied = self.sync.remembered()
            with self.db.write() as conn:
                store.mark_synced(
                    conn, hosts - report.problems.keys(), hosts & report.problems.keys()
                )
                store.record_synced(
                    conn,
                    {k: v for k, v in applied.items() if self._recorded.get(k) != v},
                    self._recorded.keys() - applied.keys(),
                )
            self._recorded = applied
            self._in_sync = None if report.problems else (agents, segments)
            return report

    def wake(self) -> None:
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="placement-reporter", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self.run_once()
            except PlacementUnavailable as exc:
                LOG.warning("placement reporter: Placement unavailable, will retry: %s", exc)
            except Exception:
                LOG.exception("placement reporter pass failed; will retry")

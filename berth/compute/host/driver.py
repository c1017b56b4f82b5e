"""The simulated hypervisor driver: spawns take a configurable time and fail on request.

Failures are injected per host (every spawn there fails), per call (the next N spawns fail) or by
probability, from a seeded random generator so that a run can be repeated.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field


class SpawnFailed(Exception):
    """The hypervisor could not start the server; another host may."""


@dataclass
class FailurePlan:
    """When a simulated spawn fails."""

    always: bool = False
    next_calls: int = 0
    probability: float = 0.0


@dataclass
class SimulatedDriver:
    host: str
    spawn_seconds: float = 0.0
    failures: FailurePlan = field(default_factory=FailurePlan)
    seed: int | None = None
    running: set[str] = field(default_factory=set)
    # Powered off but kept (shelved, not offloaded).
    stopped: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def spawn(self, instance_uuid: str) -> None:
        """Start the server (a simulated hypervisor has no VIFs to plug); SpawnFailed when the
        plan says so."""
        if self.spawn_seconds:
            time.sleep(self.spawn_seconds)
        with self._lock:
            reason = self._failure()
            if reason is None:
                self.running.add(instance_uuid)
        if reason is not None:
            raise SpawnFailed(f"simulated spawn failure on {self.host}: {reason}")

    def _failure(self) -> str | None:
        if self.failures.always:
            return "every spawn on this host fails"
        if self.failures.next_calls > 0:
            self.failures.next_calls -= 1
            return "injected for this call"
        if self.failures.probability and self._random.random() < self.failures.probability:
            return f"injected with probability {self.failures.probability}"
        return None

    def destroy(self, instance_uuid: str) -> None:
        """Stop and forget the server; destroying one that is not there is fine."""
        with self._lock:
            self.running.discard(instance_uuid)
            self.stopped.discard(instance_uuid)

    def power_off(self, instance_uuid: str) -> None:
        """Stop the server, keeping it (a shelved server's guest); idempotent."""
        with self._lock:
            self.running.discard(instance_uuid)
            self.stopped.add(instance_uuid)

    def power_on(self, instance_uuid: str) -> None:
        """Start a stopped server again; idempotent."""
        with self._lock:
            self.stopped.discard(instance_uuid)
            self.running.add(instance_uuid)

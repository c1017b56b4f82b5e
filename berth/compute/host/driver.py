"""The simulated hypervisor driver: spawns take a configurable time and fail on request.

Failures are injected per host (every spawn there fails), per call (the next N spawns fail) or by
probability, from a seeded random generator so that a run can be repeated.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from berth.common.timeutils import utcnow

# Power states (the API's OS-EXT-STS:power_state numbers).
_RUNNING, _PAUSED, _SHUTDOWN, _SUSPENDED = 1, 3, 4, 7


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
    # Powered off but kept (stopped, or shelved and not offloaded).
    stopped: set[str] = field(default_factory=set)
    paused: set[str] = field(default_factory=set)
    suspended: set[str] = field(default_factory=set)
    # When each guest last started running (spawned, powered on, resumed): its uptime.
    started: dict[str, datetime] = field(default_factory=dict)

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
                self.started[instance_uuid] = utcnow()
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
            self._forget(instance_uuid)

    def power_off(self, instance_uuid: str) -> None:
        """Stop the server, keeping it (a shelved server's guest); idempotent."""
        self.set_power(instance_uuid, _SHUTDOWN)

    def power_on(self, instance_uuid: str) -> None:
        """Start a stopped server again; idempotent."""
        self.set_power(instance_uuid, _RUNNING)

    def set_power(self, instance_uuid: str, power_state: int) -> None:
        """Put the guest in a power state (Nova's numbers: 1 running, 3 paused, 4 shut down,
        7 suspended); a reboot is "running" again. Idempotent."""
        with self._lock:
            self._forget(instance_uuid)
            held = {
                _RUNNING: self.running,
                _PAUSED: self.paused,
                _SHUTDOWN: self.stopped,
                _SUSPENDED: self.suspended,
            }[power_state]
            held.add(instance_uuid)
            if power_state == _RUNNING:
                self.started[instance_uuid] = utcnow()

    def state_of(self, instance_uuid: str) -> tuple[str, datetime | None] | None:
        """The guest's state in upstream's words (running, paused, shutdown, suspended) and when
        it started running (None unless running); None when this host has no such guest."""
        with self._lock:
            for state, held in (
                ("running", self.running),
                ("paused", self.paused),
                ("shutdown", self.stopped),
                ("suspended", self.suspended),
            ):
                if instance_uuid in held:
                    return state, self.started.get(instance_uuid) if state == "running" else None
        return None

    def _forget(self, instance_uuid: str) -> None:
        for held in (self.running, self.stopped, self.paused, self.suspended):
            held.discard(instance_uuid)
        self.started.pop(instance_uuid, None)

"""The simulated hypervisor driver: spawns take a configurable time and fail on request.

Failures are injected per host (every spawn there fails), per call (the next N spawns fail) or by
probability, from a seeded random generator so that a run can be repeated.

Each guest it runs is a :class:`~berth.compute.host.guest.Guest`: what a real guest would have
that the API can ask about (its console log, its admin password, the files and config drive it
was given, the rescue image it runs from). It lives in the host process, as a real hypervisor's
guests live on its host: a host that restarts has lost its guests' consoles.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from berth.common.timeutils import utcnow
from berth.compute.host.guest import Guest, GuestNotRunning, Provisioning

# Power states (the API's OS-EXT-STS:power_state numbers).
_RUNNING, _PAUSED, _SHUTDOWN, _SUSPENDED = 1, 3, 4, 7
# A simulated guest's disk as a snapshot copies it: a header that names it, then zeros.
DISK_BYTES = 64 * 1024
_DISK_CHUNKS = 4


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
    # How long copying a guest's disk takes (a snapshot stays "saving" meanwhile, long enough
    # for a client to see it, as on a real hypervisor).
    snapshot_seconds: float = 0.5
    running: set[str] = field(default_factory=set)
    # Powered off but kept (stopped, or shelved and not offloaded).
    stopped: set[str] = field(default_factory=set)
    paused: set[str] = field(default_factory=set)
    suspended: set[str] = field(default_factory=set)
    # When each guest last started running (spawned, powered on, resumed): its uptime.
    started: dict[str, datetime] = field(default_factory=dict)
    guests: dict[str, Guest] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)
        self._lock = threading.Lock()

    def spawn(self, instance_uuid: str, provisioning: Provisioning | None = None) -> None:
        """Start the server (a simulated hypervisor has no VIFs to plug), a new guest given what
        ``provisioning`` holds; SpawnFailed when the plan says so."""
        if self.spawn_seconds:
            time.sleep(self.spawn_seconds)
        with self._lock:
            reason = self._failure()
            if reason is None:
                self.running.add(instance_uuid)
                self.started[instance_uuid] = utcnow()
                guest = Guest(instance_uuid, self.host)
                guest.boot(provisioning or Provisioning())
                self.guests[instance_uuid] = guest
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

    def disk_image(self, instance_uuid: str) -> Iterator[bytes]:
        """The guest's disk as a snapshot reads it, in chunks, over ``snapshot_seconds``."""
        header = f"berth simulated disk of server {instance_uuid} on {self.host}\n".encode()
        disk = header + bytes(DISK_BYTES - len(header))
        step = DISK_BYTES // _DISK_CHUNKS
        for start in range(0, DISK_BYTES, step):
            if self.snapshot_seconds:
                time.sleep(self.snapshot_seconds / _DISK_CHUNKS)
            yield disk[start : start + step]

    def destroy(self, instance_uuid: str) -> None:
        """Stop and forget the server; destroying one that is not there is fine."""
        with self._lock:
            self._forget(instance_uuid)
            self.guests.pop(instance_uuid, None)

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
            was = self._power_of(instance_uuid)
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
            guest = self._guest(instance_uuid)
            if guest is not None:
                guest.power_changed(was, power_state)

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

    def rescue(self, instance_uuid: str, image_ref: str, admin_password: str) -> None:
        """Boot the guest from ``image_ref`` with its own disk attached, and the password for
        that boot; running whatever it was."""
        with self._lock:
            self._forget(instance_uuid)
            self.running.add(instance_uuid)
            self.started[instance_uuid] = utcnow()
            self._known(instance_uuid).rescue(image_ref, admin_password)

    def unrescue(self, instance_uuid: str) -> None:
        """Boot the guest from its own disk again; running."""
        with self._lock:
            self._forget(instance_uuid)
            self.running.add(instance_uuid)
            self.started[instance_uuid] = utcnow()
            self._known(instance_uuid).unrescue()

    def set_admin_password(self, instance_uuid: str, password: str) -> None:
        """What a guest agent does: the running guest's admin password becomes ``password``;
        GuestNotRunning when it is not running."""
        with self._lock:
            if instance_uuid not in self.running:
                raise GuestNotRunning(f"The guest of {instance_uuid} is not running.")
            self._known(instance_uuid).set_admin_password(password)

    def console_output(self, instance_uuid: str) -> str:
        """The guest's console log ("" for a guest this host does not run)."""
        with self._lock:
            guest = self._guest(instance_uuid)
            return "" if guest is None else guest.console_text()

    def guest(self, instance_uuid: str) -> Guest | None:
        with self._lock:
            return self._guest(instance_uuid)

    def _guest(self, instance_uuid: str) -> Guest | None:
        return self.guests.get(instance_uuid)

    def _known(self, instance_uuid: str) -> Guest:
        """The guest, or a new one for a server this host runs but has no record of (the host
        restarted since it spawned it)."""
        return self.guests.setdefault(instance_uuid, Guest(instance_uuid, self.host))

    def _power_of(self, instance_uuid: str) -> int | None:
        for power_state, held in (
            (_RUNNING, self.running),
            (_PAUSED, self.paused),
            (_SHUTDOWN, self.stopped),
            (_SUSPENDED, self.suspended),
        ):
            if instance_uuid in held:
                return power_state
        return None

    def _forget(self, instance_uuid: str) -> None:
        for held in (self.running, self.stopped, self.paused, self.suspended):
            held.discard(instance_uuid)
        self.started.pop(instance_uuid, None)

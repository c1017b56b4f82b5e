"""Running every thread of a process on one CPU, the one least busy with other work.

Berth's all-in-one process (``berth up``) runs its Python in dozens of threads under one
interpreter lock, so it can never run more than one CPU's worth of Python. Spread over several
CPUs it runs slower than on one: every SQLite statement and every wait on a socket releases the
lock, a thread waiting on another CPU takes it, and the first must wake that CPU to get it back.
On one CPU the thread that released the lock mostly takes it back at once. Measured with
``bench.boot_bench`` on the 2-core machine of docs/performance.md: a third less CPU per boot on
one CPU, and more boots per second despite the lost core.

A pinned process cannot leave a CPU that other work has come to keep busy, as the system would
move it: so every few seconds it moves itself to a CPU where other processes leave it more room.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path

LOG = logging.getLogger(__name__)

_TASKS = Path("/proc/self/task")
_STAT = Path("/proc/stat")
_OWN_STAT = Path("/proc/self/stat")
# How long the CPUs' business is watched before the first is chosen, and between two looks.
_FIRST_LOOK_SECONDS = 0.1
_LOOK_SECONDS = 2.0
# Another CPU must have this share of a CPU's time more room for the process to move there.
_MOVE_MARGIN = 0.2


class OneCpu:
    """Keeps every thread of this process (and those it starts) on one CPU of those it may
    use, moving them when another CPU has more room (``follow``)."""

    def __init__(self) -> None:
        self.cpu: int | None = None
        self._allowed = sorted(os.sched_getaffinity(0)) if _can_pin() else []

    def pin(self) -> int | None:
        """Pin to the CPU least busy over a tenth of a second (two processes started
        together, tests in parallel, take different ones); that CPU, or None where there is
        nothing to do (the system cannot pin threads, or the process may use one CPU anyway)."""
        if len(self._allowed) < 2:
            return None
        before = _busy()
        time.sleep(_FIRST_LOOK_SECONDS)
        after = _busy()
        self._move(min(self._allowed, key=lambda c: after.get(c, 0) - before.get(c, 0)))
        return self.cpu

    def follow(self) -> None:
        """From now on, look every few seconds and move to a CPU with more room, in a thread
        of its own for as long as the process runs."""
        if self.cpu is not None:
            threading.Thread(target=self._follow, name="one-cpu", daemon=True).start()

    def _follow(self) -> None:
        busy, own = _busy(), _own_ticks()
        while True:
            time.sleep(_LOOK_SECONDS)
            now, own_now = _busy(), _own_ticks()
            # What other processes kept each CPU busy with: the process runs on its own CPU.
            others = {c: now.get(c, 0) - busy.get(c, 0) for c in self._allowed}
            if self.cpu in others:
                others[self.cpu] -= own_now - own
            busy, own = now, own_now
            ticks = _LOOK_SECONDS * os.sysconf("SC_CLK_TCK")
            roomier = more_room(self.cpu, others, _MOVE_MARGIN * ticks)
            if roomier is not None:
                LOG.info("moving every thread from CPU %s to CPU %d (less busy)", self.cpu, roomier)
                if not self._move(roomier):
                    return

    def _move(self, cpu: int) -> bool:
        """Every thread to ``cpu``; False when the system refuses (a container that may not
        pin, say): then every thread runs on any CPU again, and the process stays spread."""
        try:
            self._set_all({cpu})
        except OSError as exc:
            LOG.warning("cannot keep this process's threads on one CPU (%s): they run on any", exc)
            with contextlib.suppress(OSError):
                self._set_all(set(self._allowed))
            self.cpu = None
            return False
        self.cpu = cpu
        return True

    @staticmethod
    def _set_all(cpus: set[int]) -> None:
        # Twice: a thread started by one not yet moved, while the first round ran, is caught by
        # the second (started by a moved one, it would be on the CPUs already).
        for _ in range(2):
            for task in _TASKS.iterdir():
                try:
                    os.sched_setaffinity(int(task.name), cpus)
                except ProcessLookupError:
                    continue  # a thread that ended meanwhile


def more_room(cpu: int | None, others: dict[int, float], margin: float) -> int | None:
    """The CPU to move to from ``cpu``, given how busy other processes kept each CPU: the least
    busy, when it is so by more than ``margin``; None to stay."""
    best = min(sorted(others), key=lambda c: others[c])
    if cpu is None or cpu not in others or others[best] + margin >= others[cpu]:
        return None
    return best


def _can_pin() -> bool:
    return hasattr(os, "sched_setaffinity") and _TASKS.is_dir()


def _busy() -> dict[int, int]:
    """Per CPU, the clock ticks it has spent busy (neither idle nor waiting on I/O) since the
    system started; empty where the system does not tell."""
    try:
        lines = _STAT.read_text().splitlines()
    except OSError:
        return {}
    busy = {}
    for line in lines:
        name, *ticks = line.split()
        if name.startswith("cpu") and name != "cpu":
            values = [int(t) for t in ticks]
            busy[int(name[3:])] = sum(values) - values[3] - values[4]
    return busy


def _own_ticks() -> int:
    """The clock ticks this process has run (user and system) since it started."""
    try:
        fields = _OWN_STAT.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    # utime and stime, the 14th and 15th fields of the whole line (the split drops two).
    return int(fields[11]) + int(fields[12])

"""Running every thread of a process on one CPU.

Berth's all-in-one process (``berth up``) runs its Python in dozens of threads under one
interpreter lock, so it can never run more than one CPU's worth of Python. Spread over several
CPUs it runs slower than on one: every SQLite statement and every wait on a socket releases the
lock, a thread waiting on another CPU takes it, and the first must wake that CPU to get it back.
On one CPU the thread that released the lock mostly takes it back at once. Measured with
``bench.boot_bench`` on the 2-core machine of docs/performance.md: a third less CPU per boot on
one CPU, and more boots per second despite the lost core.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_TASKS = Path("/proc/self/task")
_STAT = Path("/proc/stat")
# How long the CPUs' business is watched before one is chosen.
_WATCH_SECONDS = 0.1


def pin_to_one_cpu() -> int | None:
    """Run every thread of this process, and the threads and processes they start from now
    on, on one CPU: of those the process may use, the least busy over a tenth of a second (so
    that two such processes started together, tests in parallel, take different ones). That
    CPU, or None where there is nothing to do (the system cannot pin threads, or the process
    may use one CPU anyway)."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    cpu = _least_busy(allowed)
    # Twice: a thread started by one not yet pinned, while the first round ran, is caught by
    # the second (started by a pinned one, it would be on the CPU already).
    for _ in range(2):
        for task in _TASKS.iterdir():
            try:
                os.sched_setaffinity(int(task.name), {cpu})
            except ProcessLookupError:
                continue  # a thread that ended meanwhile
    return cpu


def _least_busy(allowed: set[int]) -> int:
    before = _busy()
    time.sleep(_WATCH_SECONDS)
    after = _busy()
    return min(sorted(allowed), key=lambda cpu: after.get(cpu, 0) - before.get(cpu, 0))


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

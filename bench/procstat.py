"""Where a benchmark's CPU goes: the server's workers, the database server and the client (Linux /proc)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")
_DATABASE_COMMANDS = ("postgres", "mariadbd", "mysqld")


def _status(proc: Path) -> dict[str, str]:
    try:
        lines = (proc / "status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _cmdline(proc: Path) -> list[str]:
    try:
        return (proc / "cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def _procs() -> list[Path]:
    return [p for p in Path("/proc").iterdir() if p.name.isdigit()]


def worker_pids(base_url: str) -> list[int]:
    """The worker processes of the placement server listening at ``base_url``: the children of
    the process started with that port."""
    port = base_url.rsplit(":", 1)[1]
    procs = _procs()
    servers = {p.name for p in procs if "placement" in _cmdline(p) and port in _cmdline(p)}
    return [
        int(p.name)
        for p in procs
        if _status(p).get("PPid", "").strip() in servers
        and any("spawn_main" in part for part in _cmdline(p))
    ]


def worker_memory_mb(base_url: str) -> list[float]:
    """Resident memory of each worker of the server listening at ``base_url``."""
    return memory_mb(worker_pids(base_url))


def children(pid: int) -> list[int]:
    """The direct children of ``pid``."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def memory_mb(pids: list[int], field: str = "VmRSS") -> list[float]:
    """Resident memory of each of ``pids`` (``VmHWM``: the most it has had)."""
    rss = [_status(Path(f"/proc/{pid}")).get(field, "0 kB") for pid in pids]
    return [int(value.split()[0]) / 1024 for value in rss]


def cpu_model() -> str:
    """The processor's model name, as /proc/cpuinfo gives it."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def database_pids() -> list[int]:
    """Every process of a local PostgreSQL or MariaDB server (its backends included)."""
    return [
        int(p.name)
        for p in _procs()
        if _status(p).get("Name", "").strip().startswith(_DATABASE_COMMANDS)
    ]


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time of ``pids`` so far; a process that has gone counts nothing."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS


@dataclass
class CpuSplit:
    """CPU seconds spent by each party between two readings."""

    workers: float
    database: float
    client: float


class CpuMeter:
    """Reads the CPU of the workers, the database and this process, then the difference."""

    def __init__(self, base_url: str) -> None:
        self.workers = worker_pids(base_url)
        # Backends come and go with connections: those started during the run are found at the
        # end and count from their start.
        self.database = database_pids()
        self._start = self._read()

    def _read(self) -> tuple[float, float, float]:
        mine = os.times()
        return (
            cpu_seconds(self.workers),
            cpu_seconds(self.database),
            mine.user + mine.system,
        )

    def split(self) -> CpuSplit:
        self.database = sorted(set(self.database) | set(database_pids()))
        end = self._read()
        return CpuSplit(*(b - a for a, b in zip(self._start, end, strict=True)))

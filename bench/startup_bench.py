"""How long ``berth up --hosts N`` takes to answer, fresh and again on its data directory.

    .venv/bin/python -m bench.startup_bench --hosts 1000 [--hosts 10000] [--auth noauth2]

For each ``--hosts``, starts ``berth up`` as an operator would (its own process, the embedded
Keystone unless ``--auth noauth2``), times it from launch until its port answers the compute API
with every host registered (the port answers 503 until then), stops it, and starts it again on
the same data directory. Prints the seconds, the peak memory of the process (VmHWM), the lines
it logged (without the access log, which this benchmark's own polling fills), and the start-up
phases it logged at INFO.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench import procstat

BERTH = Path(sys.executable).with_name("berth")
PHASE = re.compile(r"INFO berth\.allinone\.progress: (.*)$")


@dataclass(frozen=True)
class Start:
    seconds: float
    peak_mb: float
    log_lines: int
    phases: list[str]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, action="append", help="fleet size (repeatable)")
    parser.add_argument("--auth", choices=("keystone", "noauth2"), default="keystone")
    parser.add_argument("--port", type=int, default=18480)
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, {procstat.cpu_model()}")
    rows = []
    for hosts in args.hosts or [1000]:
        data = Path(tempfile.mkdtemp(prefix=f"berth-startup-{hosts}-"))
        for label in ("fresh", "restart"):
            started = _start(hosts, data, args.auth, args.port, args.timeout)
            print(f"\n{hosts} hosts, {label}: up in {started.seconds:.1f} s, "
                  f"peak {started.peak_mb:.0f} MB, {started.log_lines} log lines")  # fmt: skip
            for phase in started.phases:
                print(f"  {phase}")
            rows.append((hosts, label, started))
    print("\n| hosts | start | up in | peak memory | log lines |")
    print("|---:|---|---:|---:|---:|")
    for hosts, label, started in rows:
        print(f"| {hosts:,} | {label} | {started.seconds:.1f} s | {started.peak_mb:,.0f} MB | "
              f"{started.log_lines} |")  # fmt: skip
    return 0


def _start(hosts: int, data: Path, auth: str, port: int, timeout: float) -> Start:
    log = data.with_suffix(".log")
    command = [str(BERTH), "up", "--hosts", str(hosts), "--port", str(port),
               "--data-dir", str(data), "--auth", auth]  # fmt: skip
    began = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    peak = 0.0
    try:
        while not _answers(port):
            if process.poll() is not None:
                raise SystemExit(f"berth up ended with {process.returncode}; see {log}")
            if time.perf_counter() - began > timeout:
                raise SystemExit(f"berth up did not answer within {timeout} s; see {log}")
            time.sleep(0.1)
        seconds = time.perf_counter() - began
        [peak] = procstat.memory_mb([process.pid], "VmHWM")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    lines = [line for line in log.read_text().splitlines() if " uvicorn.access: " not in line]
    phases = [m.group(1) for line in lines if (m := PHASE.search(line))]
    return Start(seconds, peak, len(lines), phases)


def _answers(port: int) -> bool:
    """Whether the compute API answers as itself (not the 503 of a starting Berth)."""
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/compute/", timeout=2)
    except httpx.HTTPError:
        return False
    return answer.status_code != 503


if __name__ == "__main__":
    sys.exit(main())

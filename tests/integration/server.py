"""Start a real ``berth serve placement`` process on a free port, for tests that need sockets."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_placement(database_url: str, *extra: str, workers: int = 1) -> Iterator[str]:
    """The base URL of a placement server that is up; it is stopped with SIGTERM afterwards."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "berth.cli", "serve", "placement",
        "--host", "127.0.0.1", "--port", str(port),
        "--database-url", database_url, "--workers", str(workers), *extra,
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, proc)
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    output = proc.stdout.read().decode() if proc.stdout else ""
    if proc.returncode != 0 or "Finished server process" not in output:
        raise AssertionError(f"placement did not stop cleanly ({proc.returncode}):\n{output}")


def _wait_until_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = proc.stdout.read().decode() if proc.stdout else ""
            raise AssertionError(f"placement did not start:\n{output}")
        try:
            httpx.get(url + "/", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError("placement did not answer within 30 s")

"""Start a real ``berth serve placement`` or ``berth serve network`` process on a free port, for
tests that need sockets."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO

import httpx

# A fleet for the CLI tours: one cell, two OVS hosts (cn1, cn2) with a 1 Gbit/s bridge on "public".
TWO_OVS_HOSTS = {
    "cells": ["cell1"],
    "hosts": [{"name": "cn", "count": 2, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
               "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1000000,
                                             "ingress_kbps": 1000000}}}}],
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_placement(
    database_url: str, *extra: str, workers: int = 1, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """The base URL of a placement server that is up; it is stopped with SIGTERM afterwards.
    ``env``: BERTH_* settings for it (the test's own are not passed on)."""
    with _running("placement", _serve("placement", database_url, extra, workers), env) as url:
        yield url


@contextmanager
def running_network(database_url: str, *extra: str, workers: int = 1) -> Iterator[str]:
    """The base URL of a network server (the Networking API) that is up; it is stopped with
    SIGTERM afterwards. ``extra`` are more options of ``berth serve network``."""
    with _running("network", _serve("network", database_url, extra, workers)) as url:
        yield url


@contextmanager
def running_berth_up(data_dir: str, fleet: str, auth: str = "noauth2") -> Iterator[str]:
    """The base URL of ``berth up`` (every service on one port) with ``fleet``; ``auth``
    keystone runs its Keystone and writes password clouds to clouds.yaml."""
    arguments = ["up", "--data-dir", data_dir, "--fleet", fleet, "--auth", auth]
    with _running("berth up", lambda port: [*arguments, "--port", str(port)]) as url:
        yield url


def _serve(
    service: str, database_url: str, extra: tuple[str, ...], workers: int
) -> Callable[[int], list[str]]:
    return lambda port: [
        "serve", service, "--host", "127.0.0.1", "--port", str(port),
        "--database-url", database_url, "--workers", str(workers), *extra,
    ]  # fmt: skip


@contextmanager
def _running(
    service: str, arguments: Callable[[int], list[str]], settings: Mapping[str, str] | None = None
) -> Iterator[str]:
    """``berth <arguments(port)>`` on a free port until the block ends; it must stop cleanly."""
    port = free_port()
    cmd = [sys.executable, "-m", "berth.cli", *arguments(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
    env.update(settings or {})
    # A file, not a pipe: nobody reads a pipe while the server runs, and a full one blocks
    # every worker at its next log line.
    with tempfile.TemporaryFile() as log:
        # Its own session, so that a server that will not stop is killed with all its workers.
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_up(service, url, proc, log)
            yield url
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
        output = _read(log)
    if proc.returncode != 0 or "Finished server process" not in output:
        raise AssertionError(f"{service} did not stop cleanly ({proc.returncode}):\n{output}")


def _read(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode()


def _wait_until_up(service: str, url: str, proc: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    """Until the root document (which needs no token in either service) answers."""
    # berth up sets up its Keystone on a new data directory first: tens of seconds on a busy CI.
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output = _read(log)
            raise AssertionError(f"{service} did not start:\n{output}")
        try:
            httpx.get(url + "/", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise AssertionError(f"{service} did not answer within 180 s:\n{_read(log)}")

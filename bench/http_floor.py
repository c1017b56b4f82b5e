"""The HTTP floor of a claim on this machine: what no Placement can beat here.

A do-nothing ASGI app, served by uvicorn with Placement's worker count, answers the claim's
candidates query with a fixed body of the same shape (20 answers and their trees' summaries) and
its ``PUT /allocations`` with 204, touching no database. The claim benchmark's own clients drive
it (``placement_bench._claims``, 8 threads). The claims per second it reaches are the ceiling
set by the HTTP stack, the event loop and the client sharing the machine's cores; Placement's
real work (the index, the search, the database transaction) only comes on top.

    .venv/bin/python -m bench.http_floor [--workers 2] [--clients 8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from bench.placement_bench import _claims
from bench.procstat import children, cpu_seconds

Message = dict[str, Any]


def _candidates_body() -> bytes:
    """A candidates answer shaped as the claim query's (limit=20, six providers a tree): 35 KB,
    where the real one is 42 KB at N = 10,000."""
    answers, summaries = [], {}
    for tree in range(20):
        root = str(uuid.UUID(int=tree + 1))
        answers.append(
            {
                "allocations": {root: {"resources": {"VCPU": 2, "MEMORY_MB": 4096, "DISK_GB": 20}}},
                "mappings": {"": [root]},
            }
        )
        for child in range(6):
            summaries[str(uuid.UUID(int=(tree + 1) * 100 + child)) if child else root] = {
                "resources": {"VCPU": {"capacity": 256, "used": 120}},
                "traits": ["HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH"],
                "parent_provider_uuid": None if not child else root,
                "root_provider_uuid": root,
            }
    return orjson.dumps({"allocation_requests": answers, "provider_summaries": summaries})


_BODY = _candidates_body()
_JSON = [(b"content-type", b"application/json"), (b"content-length", str(len(_BODY)).encode())]


async def app(
    scope: Message,
    receive: Callable[[], Awaitable[Message]],
    send: Callable[[Message], Awaitable[None]],
) -> None:
    """GET: the fixed candidates body; anything else: read the body, answer 204."""
    if scope["type"] != "http":
        return
    if scope["method"] == "GET":
        await send({"type": "http.response.start", "status": 200, "headers": _JSON})
        await send({"type": "http.response.body", "body": _BODY})
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class FloorRun:
    """Claims made against the do-nothing app, in how many seconds, and the CPU seconds its
    workers and this process spent on them."""

    made: int
    spent: float
    workers_cpu: float
    client_cpu: float


def run(workers: int, clients: int, seconds: float) -> FloorRun:
    """Serve the do-nothing app with ``workers`` and drive it with the claim clients."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "bench.http_floor:app", "--port", str(port),
         "--workers", str(workers), "--no-access-log", "--log-level", "warning"],
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(base + "/")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        pids = children(server.pid)
        before_workers, before_me = cpu_seconds(pids), sum(os.times()[:2])
        start = time.perf_counter()
        made, _ = _claims(base, clients, seconds)
        spent = time.perf_counter() - start
        workers_cpu = cpu_seconds(pids) - before_workers
        client_cpu = sum(os.times()[:2]) - before_me
    finally:
        server.terminate()
        server.wait(timeout=20)
    return FloorRun(made, spent, workers_cpu, client_cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    floor = run(args.workers, args.clients, args.seconds)
    made = floor.made
    print(f"HTTP floor: {made / floor.spent:,.0f} claims/s with {args.clients} clients and "
          f"{args.workers} workers doing nothing ({len(_BODY):,} byte candidates body)")  # fmt: skip
    print(f"CPU per claim: workers {floor.workers_cpu * 1000 / made:.2f} ms, "
          f"client {floor.client_cpu * 1000 / made:.2f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

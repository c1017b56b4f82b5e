"""Placement against the machine's floor (issue 17), in one invocation.

    .venv/bin/python -m bench.placement_floor [--n 1000 10000] [--database-url URL] [--reuse]
        [--reset] [--seed 1] [--workers 2] [--clients 8] [--repeat 10] [--claim-seconds 10]

For each ``--n``: the reference cloud (``bench/reference_cloud.py``) is written (or, with
``--reuse``, found) in the database, and a real ``berth serve placement`` serves it, as
``bench/placement_bench.py`` does. Then:

- Candidates against the floor: the exact answer of each measured ``GET
  /allocation_candidates`` (status, headers and body, as sent) is captured from the real server;
  a do-nothing ASGI app, served by uvicorn with the placement server's settings (the worker count,
  the host, the log configuration and level, so the access log too, the graceful-shutdown
  timeout), answers that same response to that same path. One httpx client times both,
  alternating a real and a floor request ``--repeat`` times (so a slow patch of the machine
  hits both); p50 of each and their ratio.
- Claims against the floor: placement_bench's claim clients (8 threads of candidates with
  ``limit=20`` then ``PUT /allocations``) run for ``--claim-seconds`` against the real server,
  then against the same do-nothing app (the claim query answered with the real server's body,
  ``PUT`` with 204), then against ``bench/http_floor.py`` as it runs on its own (its own 35 KB body,
  no access log), then against the do-nothing app once more with each ``PUT`` writing its claim
  on the database driver alone (``bench/claim_write.py``: the least a claim must write, in the
  same PostgreSQL database, or a SQLite file of its own; not on MariaDB). Claims/s of each and
  Placement's share of each floor. The run ends with the over-commit check of placement_bench:
  exit 1 if any provider's usage exceeds its capacity.

Without ``--database-url`` each N gets a fresh SQLite file. A database URL holds one cloud: give
one ``--n`` with it, or ``--reset`` to empty the database (every table dropped) before each N is
written. With ``--reuse`` the N printed is the number of ``cn*`` trees found.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import sqlalchemy as sa

from bench import claim_write, http_floor
from bench.placement_bench import _HEADERS, PORTS_QUERY, _claims, open_cloud, overcommitted
from bench.procstat import CpuMeter, children, cpu_model, cpu_seconds
from berth.common import logs
from berth.common.db import Database
from berth.placement.store import schema
from berth.placement.store.database import open_database
from tests.integration.server import free_port, running_placement

Message = dict[str, Any]
# path?query -> (status, headers as sent, body as sent)
Answers = dict[str, tuple[int, list[tuple[bytes, bytes]], bytes]]

FLAVOR = "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"
CLAIM_QUERY = f"/allocation_candidates?{FLAVOR}&limit=20"  # placement_bench._claims' query
_ANSWERS_ENV = "PLACEMENT_FLOOR_ANSWERS"
# Set for the floor with the write: the database its PUTs write claims to (bench/claim_write.py).
_WRITE_ENV = "PLACEMENT_FLOOR_WRITE_URL"
# Headers uvicorn adds to every response itself: the floor's server adds them again.
_ADDED_BY_SERVER = {b"date", b"server"}


def queries(n: int) -> list[tuple[str, str]]:
    """The measured queries: the flavor alone and with two ports under a limit, and the flavor
    alone without a limit where the answer stays small (N ≤ 1,000: about 2 MB)."""
    measured = [
        ("flavor only, limit 1000", f"/allocation_candidates?{FLAVOR}&limit=1000"),
        ("flavor + 2 ports, limit 1000", f"/allocation_candidates?{PORTS_QUERY}&limit=1000"),
    ]
    if n <= 1000:
        measured.append(("flavor only, no limit", f"/allocation_candidates?{FLAVOR}"))
    return measured


# The do-nothing app ------------------------------------------------------------------------------


def floor_app() -> Callable[..., Awaitable[None]]:
    """The app of one floor worker (a uvicorn factory): every GET of a captured path gets the
    captured response, byte for byte; another GET a 404; anything else has its body read and
    gets a 204, as ``bench/http_floor.py``'s ``PUT``. With ``PLACEMENT_FLOOR_WRITE_URL`` set, a
    ``PUT /allocations/{consumer}`` first writes its claim there (``bench/claim_write.py``, from
    one of 8 threads), and is answered 409 when it does not fit."""
    answers: Answers = pickle.loads(Path(os.environ[_ANSWERS_ENV]).read_bytes())
    missing = (404, [(b"content-length", b"0")], b"")
    write_url = os.environ.get(_WRITE_ENV)
    writer = claim_write.ClaimWriter(write_url) if write_url else None
    threads = ThreadPoolExecutor(8, thread_name_prefix="claims")

    async def app(
        scope: Message,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            path = scope["path"]
            if scope["query_string"]:
                path += "?" + scope["query_string"].decode("latin-1")
            status, headers, body = answers.get(path, missing)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        status = 204
        if writer is not None and scope["path"].startswith("/allocations/"):
            claim = orjson.loads(b"".join(chunks))
            fits = await asyncio.get_running_loop().run_in_executor(
                threads,
                writer.claim,
                scope["path"].removeprefix("/allocations/"),
                claim["project_id"],
                claim["user_id"],
                claim["allocations"],
            )
            status = 204 if fits else 409
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


@contextmanager
def running_floor(
    answers: Answers, workers: int, write_url: str | None = None
) -> Iterator[tuple[str, int]]:
    """(base URL, pid) of the do-nothing app under uvicorn with the placement server's settings
    (``berth.placement.server.run``: host, worker count, factory, log level INFO with Berth's
    log configuration, so one access-log line per request, graceful-shutdown timeout 10 s);
    ``write_url``: its claims are written there."""
    with tempfile.TemporaryDirectory() as tmp:
        answers_file = Path(tmp) / "answers.pickle"
        answers_file.write_bytes(pickle.dumps(answers))
        log_config = Path(tmp) / "log.json"
        log_config.write_text(json.dumps(logs.uvicorn_config("INFO")))
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {**os.environ, _ANSWERS_ENV: str(answers_file)}
        if write_url:
            env[_WRITE_ENV] = write_url
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH")) if p
        )
        with (Path(tmp) / "server.log").open("wb") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "uvicorn", "bench.placement_floor:floor_app", "--factory",
                 "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
                 "--log-level", "info", "--log-config", str(log_config),
                 "--timeout-graceful-shutdown", "10"],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                _wait_up(base, server, workers)
                yield base, server.pid
            finally:
                server.terminate()
                server.wait(timeout=20)


def _wait_up(base: str, server: subprocess.Popen[bytes], workers: int) -> None:
    """Until every worker process is there and the server answers."""
    deadline = time.monotonic() + 60
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the floor server stopped ({server.returncode})")
        try:
            if len(children(server.pid)) >= workers:
                httpx.get(base + "/", timeout=1)
                return
        except (httpx.TransportError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the floor server did not start")
        time.sleep(0.2)


# Measures ----------------------------------------------------------------------------------------


@dataclass
class QueryRow:
    n: int
    database: str
    query: str
    real_ms: float
    floor_ms: float
    size_kb: float
    returned: int


@dataclass
class ClaimRow:
    n: int
    database: str
    claims: float
    floor: float  # the do-nothing app under the placement server's settings, real claim body
    bare: float  # bench/http_floor.py as it runs on its own
    written: float | None  # the floor with each claim's write (bench/claim_write.py)
    conflicts: int
    cpu: str


def capture(client: httpx.Client, path: str) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The response to ``path`` as the server sent it: status, headers (less those uvicorn adds
    itself) and the body's bytes before any decoding."""
    with client.stream("GET", path) as response:
        body = b"".join(response.iter_raw())
        headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _ADDED_BY_SERVER]
        if response.status_code != 200:
            raise RuntimeError(f"{path} answered {response.status_code}: {body[:500]!r}")
        return response.status_code, headers, body


def time_pair(
    real: httpx.Client, floor: httpx.Client, path: str, repeat: int
) -> tuple[float, float]:
    """p50 in ms of ``path`` on each server, a real request then a floor one, ``repeat`` times;
    the floor's answer must be the real one."""
    seconds: tuple[list[float], list[float]] = ([], [])
    bodies: list[bytes] = []
    for _ in range(repeat):
        for client, timed in zip((real, floor), seconds, strict=True):
            start = time.perf_counter()
            response = client.get(path)
            timed.append(time.perf_counter() - start)
            response.raise_for_status()
            bodies.append(response.content)
    if bodies[-1] != bodies[-2]:
        raise RuntimeError(f"the floor's answer to {path} is not the real one")
    return statistics.median(seconds[0]) * 1000, statistics.median(seconds[1]) * 1000


def measure(
    db: Database, url: str, n: int, args: argparse.Namespace
) -> tuple[list[QueryRow], ClaimRow, bool]:
    """The candidates and claims of the cloud in ``db`` against the floor; True: no over-commit."""
    database = db.backend
    rows: list[QueryRow] = []
    with (
        running_placement(url, workers=args.workers) as base,
        httpx.Client(base_url=base, headers=_HEADERS, timeout=300) as real,
    ):
        measured = queries(n)
        answers = {path: capture(real, path) for _, path in [*measured, ("claim", CLAIM_QUERY)]}
        with (
            running_floor(answers, args.workers) as (floor_base, floor_pid),
            httpx.Client(base_url=floor_base, headers=_HEADERS, timeout=300) as floor,
        ):
            print(f"\ncandidates, N={n}, {database}, {args.repeat} rounds (real, then floor):")
            for name, path in measured:
                real_ms, floor_ms = time_pair(real, floor, path, args.repeat)
                body = answers[path][2]
                returned = body.count(b'"allocations"')
                rows.append(
                    QueryRow(n, database, name, real_ms, floor_ms, len(body) / 1024, returned)
                )
                print(f"  {name:30} real {real_ms:8.1f} ms  floor {floor_ms:7.1f} ms  "
                      f"x{real_ms / floor_ms:5.1f}  ({len(body) / 1024:,.0f} KB, "
                      f"{returned} answers)")  # fmt: skip

            meter = CpuMeter(base)
            start = time.perf_counter()
            made, conflicts = _claims(base, args.clients, args.claim_seconds)
            spent = time.perf_counter() - start
            cpu = meter.split()
            claims = made / spent
            print(f"\nclaims: {made} in {spent:.1f} s = {claims:.1f}/s with {args.clients} "
                  f"clients, {conflicts} conflicts (409)")  # fmt: skip
            real_cpu = "-"
            if made:
                per = 1000 / made
                real_cpu = (f"workers {cpu.workers * per:.2f}, database {cpu.database * per:.2f}, "
                            f"client {cpu.client * per:.2f}")  # fmt: skip
                print(f"  CPU per claim (ms): {real_cpu}")

            floor_rate, floor_cpu = _floor_claims(floor_base, floor_pid, args)
            print(f"floor (do-nothing app, placement's settings, the real "
                  f"{len(answers[CLAIM_QUERY][2]):,} byte claim body): {floor_rate:,.0f} claims/s; "
                  f"CPU per claim (ms): {floor_cpu}")  # fmt: skip
    written = _written_floor(url, answers, args)
    bare = http_floor.run(args.workers, args.clients, args.claim_seconds)
    bare_rate = bare.made / bare.spent
    per = 1000 / max(bare.made, 1)
    print(f"bench/http_floor (no access log, {len(http_floor._BODY):,} byte body): "
          f"{bare_rate:,.0f} claims/s; CPU per claim (ms): workers {bare.workers_cpu * per:.2f}, "
          f"client {bare.client_cpu * per:.2f}")  # fmt: skip
    bad = overcommitted(db)
    if bad:
        print(f"OVER-COMMIT on {len(bad)} provider classes: {bad[:10]}")
    else:
        print("usage within capacity on every provider")
    cpu_note = f"real: {real_cpu}; floor: {floor_cpu}"
    row = ClaimRow(n, database, claims, floor_rate, bare_rate, written, conflicts, cpu_note)
    return rows, row, not bad


def _floor_claims(base: str, pid: int, args: argparse.Namespace) -> tuple[float, str]:
    """Claims/s of the claim clients against the floor at ``base``, and their CPU per claim."""
    workers = children(pid)
    before_workers, before_me = cpu_seconds(workers), sum(os.times()[:2])
    start = time.perf_counter()
    made, _ = _claims(base, args.clients, args.claim_seconds)
    spent = time.perf_counter() - start
    per = 1000 / max(made, 1)
    cpu = (f"workers {(cpu_seconds(workers) - before_workers) * per:.2f}, "
           f"client {(sum(os.times()[:2]) - before_me) * per:.2f}")  # fmt: skip
    return made / spent, cpu


def _written_floor(url: str, answers: Answers, args: argparse.Namespace) -> float | None:
    """Claims/s of the floor whose ``PUT`` writes each claim (``bench/claim_write.py``): on the
    same PostgreSQL database, or a SQLite file of its own; None on MariaDB."""
    if not claim_write.supported(url):
        print("floor with the claim's write: not on this database (no UPDATE ... RETURNING)")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        target = f"sqlite:///{Path(tmp) / 'claims.db'}" if url.startswith("sqlite") else url
        providers: dict[str, set[str]] = {}
        for answer in orjson.loads(answers[CLAIM_QUERY][2])["allocation_requests"]:
            for provider, held in answer["allocations"].items():
                providers.setdefault(provider, set()).update(held["resources"])
        claim_write.prepare(target, providers)
        try:
            with running_floor(answers, args.workers, write_url=target) as (base, pid):
                rate, cpu = _floor_claims(base, pid, args)
        finally:
            claim_write.drop(target)
    print(f"floor with the claim's write (the driver alone, {len(providers)} providers): "
          f"{rate:,.0f} claims/s; CPU per claim (ms): {cpu}")  # fmt: skip
    return rate


# The run -----------------------------------------------------------------------------------------


def machine() -> str:
    return f"machine: nproc {os.cpu_count()}, {cpu_model()}, load average {os.getloadavg()[0]:.2f}"


def _reset(url: str) -> None:
    """Drop every table of the database (the cloud before, its schema version too)."""
    db = open_database(url)
    metadata = sa.MetaData()
    metadata.reflect(db.engine)
    metadata.drop_all(db.engine)
    db.dispose()


def _trees(db: Database) -> int:
    rp = schema.resource_providers
    with db.read() as conn:
        return int(
            conn.scalar(
                sa.select(sa.func.count())
                .select_from(rp)
                .where(rp.c.parent_provider_id.is_(None), rp.c.name.like("cn%"))
            )
        )


def table(queries_rows: list[QueryRow], claim_rows: list[ClaimRow]) -> str:
    lines = [
        "| N | database | query | real ms | floor ms | ratio | size KB |",
        "|---:|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.n:,} | {r.database} | {r.query} | {r.real_ms:.1f} | {r.floor_ms:.1f} | "
        f"{r.real_ms / r.floor_ms:.1f}x | {r.size_kb:,.0f} |"
        for r in queries_rows
    ]
    lines += [
        "",
        "| N | database | claims/s | http_floor/s | share | floor/s (placement's settings, "
        "real body) | share | floor with the write/s | share |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {c.n:,} | {c.database} | {c.claims:.0f} | {c.bare:.0f} | {100 * c.claims / c.bare:.0f} % "
        f"| {c.floor:.0f} | {100 * c.claims / c.floor:.0f} % | {_written(c)} |"
        for c in claim_rows
    ]
    return "\n".join(lines)


def _written(row: ClaimRow) -> str:
    if row.written is None:
        return "- | -"
    return f"{row.written:.0f} | {100 * row.claims / row.written:.0f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000], help="trees")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url")
    parser.add_argument("--reuse", action="store_true", help="the database holds a cloud")
    parser.add_argument("--reset", action="store_true", help="empty the database before each N")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--claim-seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    if args.database_url and len(args.n) > 1 and not args.reset:
        parser.error("a database holds one cloud: give one --n with --database-url, or --reset")
    if args.reuse and (args.reset or not args.database_url or len(args.n) > 1):
        parser.error("--reuse needs --database-url, one --n and no --reset")
    print(machine())
    query_rows: list[QueryRow] = []
    claim_rows: list[ClaimRow] = []
    within = True
    for n in args.n:
        url = args.database_url or f"sqlite:///{Path(tempfile.mkdtemp()) / 'placement.db'}"
        if args.reset:
            _reset(url)
        db, _ = open_cloud(url, n, args.seed, args.reuse)
        if args.reuse:
            n = _trees(db)
            print(f"reference cloud: {n:,} trees found")
        rows, claims, ok = measure(db, url, n, args)
        db.dispose()
        query_rows += rows
        claim_rows.append(claims)
        within = within and ok
    print(f"\n{machine()}, {args.workers} workers, {args.clients} claim clients, "
          f"--repeat {args.repeat}, --claim-seconds {args.claim_seconds:g}\n")  # fmt: skip
    print(table(query_rows, claim_rows))
    print("\nCPU per claim (ms):")
    for c in claim_rows:
        print(f"- N={c.n:,} {c.database}: {c.cpu}")
    if not within:
        print("OVER-COMMIT: see above")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

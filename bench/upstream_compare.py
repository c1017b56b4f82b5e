"""Berth and upstream Placement side by side: the same reference cloud, queries and claims.

Upstream runs from a throwaway virtualenv outside the repository, made once::

    python3.11 -m venv /tmp/upstream-venv
    /tmp/upstream-venv/bin/pip install openstack-placement==16.0.0 psycopg2-binary gunicorn

and two empty PostgreSQL databases, one per service::

    createdb -h 127.0.0.1 -U postgres berth_cmp
    createdb -h 127.0.0.1 -U postgres upstream_cmp

Then, with the benchmark lock held (the machine has two cores)::

    flock /tmp/berth-bench.lock .venv/bin/python -m bench.upstream_compare --n 1000 --seed 1 \\
        --berth-database-url postgresql://postgres@127.0.0.1:5432/berth_cmp \\
        --upstream-database-url postgresql://postgres@127.0.0.1:5432/upstream_cmp \\
        [--upstream-venv /tmp/upstream-venv] [--repeat 10] [--upstream-repeat 3] \\
        [--claim-seconds 15] [--upstream-claim-seconds 20] [--clients 8] [--full-check] \\
        [--upstream-timeout 120] [--upstream-option SECTION.NAME=VALUE ...]

What it does, one server at a time:

1. writes the reference cloud (``bench.reference_cloud.build``, the same N and seed as
   ``bench.placement_bench``) into Berth's database;
2. starts upstream itself: a ``placement.conf`` in a temporary directory (noauth2, the upstream
   database), ``placement-manage db sync``, then ``gunicorn`` with two sync workers serving
   ``placement.wsgi.api:application`` (upstream writes its standard resource classes and traits
   as it starts); copies the cloud from Berth's database into upstream's
   (``bench.upstream_copy``), then times ``bench.placement_bench``'s queries and runs its claims
   against it, and stops it;
3. starts ``berth serve placement`` (two workers) on Berth's database and does the same;
4. prints the table (p50 and p95 of the whole round trip with one httpx client, the ratio
   upstream / Berth, the candidates each returned) and checks the answers: under a limit both
   must return as many; without one, the same candidates (allocations and mappings) on the same
   roots. ``--full-check`` also asks each limited query once without its limit on both servers,
   compares the whole sets and checks every limited answer belongs to the other side's set.
   A query upstream cannot answer within ``--upstream-timeout`` (gunicorn then kills the busy
   worker) is reported as unanswered: with upstream's defaults, the wide-tree query is one.
   Finally every provider's usage is checked against its capacity in both databases (exit 1 on
   an over-commit; exit 2 when the answers differ).

The answers are comparable because each server's claims run after its queries and each has its
own copy of the cloud. ``--upstream-option`` adds upstream settings, e.g. its opt-in ones for
wide trees (``workarounds.optimize_for_wide_provider_trees=True``,
``placement.max_allocation_candidates=1000``). ``--reuse`` runs against databases that already hold the cloud (then the
claims of earlier runs differ between the two and so may the answers).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from bench.placement_bench import _HEADERS, _claims, _queries, overcommitted
from bench.procstat import children, memory_mb, worker_memory_mb
from bench.reference_cloud import Cloud, build
from bench.upstream_copy import copy_cloud, libpq_url
from berth.common.db import Database
from berth.placement.store import migrate, schema
from berth.placement.store.database import open_database
from tests.integration.server import free_port, running_placement

# One candidate, comparable across servers: its allocations and its group mappings.
Candidate = tuple[tuple[tuple[str, str, int], ...], tuple[tuple[str, tuple[str, ...]], ...]]


@dataclass
class Answer:
    """What one query answered: its candidates (or providers) and each provider's root."""

    returned: int
    items: set[Any]
    roots: dict[str, str] = field(default_factory=dict)


@dataclass
class Side:
    """One server's figures."""

    name: str
    seconds: dict[str, list[float]] = field(default_factory=dict)
    answers: dict[str, Answer] = field(default_factory=dict)
    full: dict[str, Answer] = field(default_factory=dict)
    claims: tuple[int, int, float] = (0, 0, 0.0)
    rss_mb: list[float] = field(default_factory=list)


def _answer(body: dict[str, Any]) -> Answer:
    if "allocation_requests" not in body:
        uuids = {rp["uuid"] for rp in body["resource_providers"]}
        return Answer(len(body["resource_providers"]), uuids)
    items: set[Candidate] = set()
    for request in body["allocation_requests"]:
        allocations = tuple(
            sorted(
                (rp, rc, int(amount))
                for rp, alloc in request["allocations"].items()
                for rc, amount in alloc["resources"].items()
            )
        )
        mappings = tuple(
            sorted((s, tuple(sorted(rps))) for s, rps in request.get("mappings", {}).items())
        )
        items.add((allocations, mappings))
    roots = {rp: s["root_provider_uuid"] for rp, s in body["provider_summaries"].items()}
    return Answer(len(body["allocation_requests"]), items, roots)


def _without_limit(path: str) -> str:
    return "&".join(p for p in path.split("&") if not p.startswith("limit="))


def _get(client: httpx.Client, path: str) -> tuple[float, dict[str, Any] | None]:
    """(seconds, body) of one GET; no body when the server gave no answer in time (upstream's
    worker is killed by gunicorn's timeout, which closes the connection)."""
    start = time.perf_counter()
    try:
        response = client.get(path)
    except httpx.TransportError:
        return time.perf_counter() - start, None
    spent = time.perf_counter() - start
    if response.status_code >= 500:
        return spent, None
    response.raise_for_status()
    return spent, response.json()


def _measure(
    side: Side,
    base: str,
    cloud: Cloud,
    repeat: int,
    full_check: bool,
    clients: int,
    claim_seconds: float,
    timeout: float,
) -> None:
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"  {side.name}: load average (1 min) before its run: {load}", flush=True)
    with httpx.Client(base_url=base, headers=_HEADERS, timeout=timeout) as client:
        for name, path in _queries(cloud):
            seconds: list[float] = []
            body = None
            for _ in range(repeat):
                spent, body = _get(client, path)
                if body is None:
                    break
                seconds.append(spent)
            if body is None:
                print(f"  {side.name}: {name.strip()}: no answer after {spent:,.0f} s", flush=True)
                continue
            side.seconds[name] = seconds
            side.answers[name] = _answer(body)
            print(f"  {side.name}: {name.strip()}: p50 {_p(seconds, 50) * 1000:,.1f} ms, "
                  f"{side.answers[name].returned} returned", flush=True)  # fmt: skip
            if full_check and "limit=" in path:
                spent, body = _get(client, _without_limit(path))
                if body is None:
                    print(f"  {side.name}: {name.strip()} without its limit: no answer after "
                          f"{spent:,.0f} s", flush=True)  # fmt: skip
                    continue
                side.full[name] = _answer(body)
                print(f"  {side.name}: {name.strip()} without its limit: "
                      f"{side.full[name].returned} in {spent:,.1f} s", flush=True)  # fmt: skip
    start = time.perf_counter()
    made, conflicts = _claims(base, clients, claim_seconds)
    side.claims = (made, conflicts, time.perf_counter() - start)
    print(f"  {side.name}: claims {made} in {side.claims[2]:.1f} s, {conflicts} conflicts",
          flush=True)  # fmt: skip


def _p(seconds: list[float], q: int) -> float:
    """The q-th percentile, nearest rank (with three samples, p95 is the slowest)."""
    ordered = sorted(seconds)
    return ordered[max(0, math.ceil(len(ordered) * q / 100) - 1)]


@contextmanager
def running_upstream(
    venv: Path, database_url: str, workers: int, timeout: float, options: list[str]
) -> Iterator[tuple[str, int]]:
    """Upstream Placement under gunicorn on a free port, configured in a temporary directory
    (noauth2, the database, then ``options``, each ``section.name=value``): (base URL, master
    pid). The schema is synced first; the server is stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="upstream-placement-") as conf_dir:
        connection = sa.make_url(libpq_url(database_url)).set(drivername="postgresql+psycopg2")
        sections = {
            "DEFAULT": {"debug": "False"},
            "api": {"auth_strategy": "noauth2"},
            "placement_database": {"connection": connection.render_as_string(hide_password=False)},
        }
        for option in options:
            key, value = option.split("=", 1)
            section, name = key.rsplit(".", 1)
            sections.setdefault(section, {})[name] = value
        (Path(conf_dir) / "placement.conf").write_text(
            "".join(
                f"[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items()) + "\n"
                for section, values in sections.items()
            )
        )
        subprocess.run(
            [str(venv / "bin/placement-manage"), "--config-dir", conf_dir, "db", "sync"],
            check=True,
        )
        port = free_port()
        log_path = Path(conf_dir) / "gunicorn.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [str(venv / "bin/gunicorn"), "--workers", str(workers),
                 "--bind", f"127.0.0.1:{port}", "--timeout", str(int(timeout)),
                 "--graceful-timeout", "5",
                 "--control-socket", f"{conf_dir}/gunicorn.ctl",
                 "placement.wsgi.api:application"],
                env={**os.environ, "OS_PLACEMENT_CONFIG_DIR": conf_dir},
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            base = f"http://127.0.0.1:{port}"
            try:
                _wait_for(base, proc, log_path)
                yield base, proc.pid
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()


def _wait_for(base: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"upstream did not start:\n{log.read_text()}")
        try:
            httpx.get(base + "/", timeout=2).raise_for_status()
            return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise RuntimeError(f"upstream did not answer within 120 s:\n{log.read_text()}")


def _upstream_version(venv: Path) -> str:
    return subprocess.run(
        [str(venv / "bin/python"), "-c",
         "import importlib.metadata as m; print(m.version('openstack-placement'))"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _compare(name: str, path: str, berth: Side, upstream: Side) -> list[str]:
    """The differences between the two answers to one query (empty when they agree)."""
    ours, theirs = berth.answers.get(name), upstream.answers.get(name)
    if ours is None or theirs is None:
        return []  # no answer to compare: the table says which side gave none
    found = []
    if "limit=" in path:
        if ours.returned != theirs.returned:
            found.append(
                f"{name.strip()}: Berth returned {ours.returned}, upstream {theirs.returned}"
            )
        full_ours, full_theirs = berth.full.get(name), upstream.full.get(name)
        if full_ours is not None and full_theirs is not None:
            found += _set_difference(f"{name.strip()} (without its limit)", full_ours, full_theirs)
            if not ours.items <= full_theirs.items:
                found.append(f"{name.strip()}: {len(ours.items - full_theirs.items)} of Berth's "
                             "limited answers are not among upstream's candidates")  # fmt: skip
            if not theirs.items <= full_ours.items:
                found.append(f"{name.strip()}: {len(theirs.items - full_ours.items)} of upstream's "
                             "limited answers are not among Berth's candidates")  # fmt: skip
    else:
        found += _set_difference(name.strip(), ours, theirs)
    return found


def _set_difference(name: str, ours: Answer, theirs: Answer) -> list[str]:
    if ours.returned == theirs.returned and ours.items == theirs.items:
        return []
    only_ours, only_theirs = ours.items - theirs.items, theirs.items - ours.items
    text = (f"{name}: Berth {ours.returned} ({len(only_ours)} only in Berth), upstream "
            f"{theirs.returned} ({len(only_theirs)} only upstream)")  # fmt: skip
    if ours.roots or theirs.roots:
        ours_roots = {ours.roots[rp] for c in ours.items for rp, _, _ in c[0]}
        theirs_roots = {theirs.roots[rp] for c in theirs.items for rp, _, _ in c[0]}
        text += (f"; roots only in Berth {sorted(ours_roots - theirs_roots)[:3]}, only upstream "
                 f"{sorted(theirs_roots - ours_roots)[:3]}")  # fmt: skip
    for label, sample in (("only in Berth", only_ours), ("only upstream", only_theirs)):
        if sample:
            text += f"\n      e.g. {label}: {next(iter(sample))}"
    return [text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1000, help="compute-node trees")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--berth-database-url", required=True, help="an empty PostgreSQL db")
    parser.add_argument("--upstream-database-url", required=True, help="an empty PostgreSQL db")
    parser.add_argument("--upstream-venv", type=Path, default=Path("/tmp/upstream-venv"))
    parser.add_argument("--workers", type=int, default=2, help="per server")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=10, help="per query, against Berth")
    parser.add_argument("--upstream-repeat", type=int, default=3)
    parser.add_argument("--claim-seconds", type=float, default=15.0, help="against Berth")
    parser.add_argument("--upstream-claim-seconds", type=float, default=20.0)
    parser.add_argument(
        "--upstream-timeout",
        type=float,
        default=120.0,
        help="seconds before gunicorn kills an upstream worker busy with one request",
    )
    parser.add_argument(
        "--upstream-option",
        action="append",
        default=[],
        metavar="SECTION.NAME=VALUE",
        help="more of upstream's configuration, e.g. placement.max_allocation_candidates=1000",
    )
    parser.add_argument("--full-check", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="both databases hold the cloud")
    args = parser.parse_args(argv)

    db = open_database(args.berth_database_url)
    migrate.sync(db)
    with db.read() as conn:
        postgres = conn.scalar(sa.text("SELECT version()"))
    if args.reuse:
        with db.read() as conn:
            racks = list(conn.scalars(sa.select(schema.placement_aggregates.c.uuid)))
        cloud = Cloud(racks=racks)
    else:
        start = time.perf_counter()
        cloud = build(db, args.n, args.seed)
        print(f"reference cloud N={args.n} seed={args.seed}: {cloud.providers} providers, "
              f"{cloud.allocations} consumers, written in {time.perf_counter() - start:.1f} s")  # fmt: skip
    version = _upstream_version(args.upstream_venv)
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    ).stdout.strip()
    print(f"Berth {commit or '(not a git checkout)'}; upstream openstack-placement {version}; "
          f"{postgres}")  # fmt: skip

    upstream = Side("upstream")
    server = running_upstream(
        args.upstream_venv,
        args.upstream_database_url,
        args.workers,
        args.upstream_timeout,
        args.upstream_option,
    )
    if args.upstream_option:
        print(f"upstream options: {', '.join(args.upstream_option)}")
    with server as (base, pid):
        if not args.reuse:
            start = time.perf_counter()
            counts = copy_cloud(args.berth_database_url, args.upstream_database_url, base)
            print(f"copied into upstream's database in {time.perf_counter() - start:.1f} s "
                  f"(with ANALYZE): {counts}")  # fmt: skip
        _measure(upstream, base, cloud, args.upstream_repeat, args.full_check, args.clients,
                 args.upstream_claim_seconds, timeout=args.upstream_timeout + 30)  # fmt: skip
        upstream.rss_mb = memory_mb(children(pid))

    berth = Side("Berth")
    with running_placement(args.berth_database_url, workers=args.workers) as base:
        _measure(berth, base, cloud, args.repeat, args.full_check, args.clients,
                 args.claim_seconds, timeout=120)  # fmt: skip
        berth.rss_mb = worker_memory_mb(base)

    print(f"\nN={args.n}, seed {args.seed}, PostgreSQL, {args.workers} workers each; ms, p50 (p95); "
          f"{args.repeat} repeats on Berth, {args.upstream_repeat} on upstream")  # fmt: skip
    header = f"{'query':45} {'Berth':>17} {'upstream':>21} {'ratio':>7} {'returned':>15}"
    print(header)
    differences = []
    for name, path in _queries(cloud):
        ours, theirs = berth.seconds.get(name), upstream.seconds.get(name)
        cell_ours = f"{_p(ours, 50) * 1000:,.1f} ({_p(ours, 95) * 1000:,.1f})" if ours else "none"
        if theirs:
            cell_theirs = f"{_p(theirs, 50) * 1000:,.0f} ({_p(theirs, 95) * 1000:,.0f})"
            ratio = f"{_p(theirs, 50) / _p(ours, 50):,.0f}x" if ours else "?"
        else:
            cell_theirs = f"none in {args.upstream_timeout:,.0f} s"
            ratio = f">{args.upstream_timeout / _p(ours, 50):,.0f}x" if ours else "?"
        returned = " / ".join(
            str(side.answers[name].returned) if name in side.answers else "-"
            for side in (berth, upstream)
        )
        print(f"{name:45} {cell_ours:>17} {cell_theirs:>21} {ratio:>7} {returned:>15}")
        differences += _compare(name, path, berth, upstream)
    rates = [made / spent for made, _, spent in (berth.claims, upstream.claims)]
    print(f"{'claims per second, ' + str(args.clients) + ' clients':45} {rates[0]:>17,.1f} "
          f"{rates[1]:>21,.2f} {rates[0] / max(rates[1], 1e-9):>6,.0f}x "
          f"{'(' + str(berth.claims[0]) + ' / ' + str(upstream.claims[0]) + ' claims)':>15}")  # fmt: skip
    print(f"memory per worker after the queries (RSS, MB): Berth "
          f"{', '.join(f'{mb:,.0f}' for mb in berth.rss_mb)}; upstream "
          f"{', '.join(f'{mb:,.0f}' for mb in upstream.rss_mb)}")  # fmt: skip

    status = 0
    if differences:
        print("\nANSWERS DIFFER:")
        for text in differences:
            print(f"  {text}")
        status = 2
    else:
        checked = "full sets compared" if args.full_check else "counts under a limit"
        print(f"\nanswers agree on every query ({checked}; sets without a limit)")
    for label, url in (
        ("Berth", args.berth_database_url),
        ("upstream", args.upstream_database_url),
    ):
        bad = overcommitted(Database(url))
        if bad:
            print(f"{label}: OVER-COMMIT on {len(bad)} provider classes: {bad[:10]}")
            status = 1
        else:
            print(f"{label}: usage within capacity on every provider")
    return status


if __name__ == "__main__":
    sys.exit(main())

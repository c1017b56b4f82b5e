"""Placement at scale: build the reference cloud, then time the scheduler's queries and claims.

    .venv/bin/python -m bench.placement_bench --n 1000 [--seed 1] [--database-url URL]
        [--workers 2] [--clients 8] [--claim-seconds 10] [--repeat 20]

Prints one row per measure (p50, p95, response size, candidates returned), the load rate, claims
per second with 8 concurrent clients, and then checks every provider's usage against its capacity,
failing (exit 1) on any over-commit. ``--database-url`` must name an empty database; the default is
a fresh SQLite file.
"""

from __future__ import annotations

import argparse
import http.client
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson
import sqlalchemy as sa

from bench.procstat import CpuMeter, worker_memory_mb
from bench.reference_cloud import Cloud, build
from berth.common.db import Database
from berth.placement.store import migrate, schema
from berth.placement.store.database import open_database
from tests.integration.server import running_placement

PORTS_QUERY = (
    "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"
    "&resources_P1=NET_BW_EGR_KILOBIT_PER_SEC:1000,NET_BW_IGR_KILOBIT_PER_SEC:1000"
    "&required_P1=CUSTOM_PHYSNET_PUBLIC,CUSTOM_VNIC_TYPE_NORMAL"
    "&resources_P2=NET_BW_EGR_KILOBIT_PER_SEC:1000,NET_BW_IGR_KILOBIT_PER_SEC:1000"
    "&required_P2=CUSTOM_PHYSNET_PHYSNET1,CUSTOM_VNIC_TYPE_DIRECT&group_policy=none"
)


@dataclass
class Measure:
    name: str
    p50_ms: float
    p95_ms: float
    size_kb: float
    returned: int


def _queries(cloud: Cloud) -> list[tuple[str, str]]:
    racks = f"in:{cloud.racks[0]},{cloud.racks[1]}"
    flavor = "resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20"
    return [
        ("candidates, flavor only, limit 1000", f"/allocation_candidates?{flavor}&limit=1000"),
        (
            "candidates, flavor + 2 ports, limit 1000",
            f"/allocation_candidates?{PORTS_QUERY}&limit=1000",
        ),
        (
            "  + same_subtree (port 1 under its agent)",
            f"/allocation_candidates?{PORTS_QUERY}&limit=1000"
            "&required_A=CUSTOM_VNIC_TYPE_NORMAL&same_subtree=_A,_P1",
        ),
        (
            "  + required=CUSTOM_GOLD, member_of 2 racks",
            f"/allocation_candidates?{PORTS_QUERY}&limit=1000&required=CUSTOM_GOLD"
            f"&member_of={racks}",
        ),
        ("candidates, flavor only, no limit", f"/allocation_candidates?{flavor}"),
        (
            "candidates, sharing DISK_GB, limit 1000",
            "/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024"
            "&resources_D=DISK_GB:100&required_D=MISC_SHARES_VIA_AGGREGATE&limit=1000",
        ),
        (
            "wide tree, 8 port groups isolate, limit 1000",
            "/allocation_candidates?resources=VCPU:1&group_policy=isolate&limit=1000"
            + "".join(
                f"&resources_W{k}=NET_BW_EGR_KILOBIT_PER_SEC:1000"
                f"&required_W{k}=CUSTOM_PHYSNET_PHYSNET1,CUSTOM_VNIC_TYPE_DIRECT"
                for k in range(8)
            ),
        ),
        (
            "resource_providers?resources&required",
            "/resource_providers?resources=VCPU:2,MEMORY_MB:4096&required=CUSTOM_GOLD",
        ),
    ]


def _time(client: httpx.Client, name: str, path: str, repeat: int) -> Measure:
    seconds = []
    response = None
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(path)
        seconds.append(time.perf_counter() - start)
        response.raise_for_status()
    assert response is not None
    body = response.json()
    returned = len(body.get("allocation_requests", body.get("resource_providers", [])))
    seconds.sort()
    return Measure(
        name,
        statistics.median(seconds) * 1000,
        seconds[max(0, int(len(seconds) * 0.95) - 1)] * 1000,
        len(response.content) / 1024,
        returned,
    )


def _print_queries(client: httpx.Client, cloud: Cloud, repeat: int) -> None:
    measures = [_time(client, name, path, repeat) for name, path in _queries(cloud)]
    _check_wide(client)
    print(f"\n{'measure':45} {'p50 ms':>9} {'p95 ms':>9} {'size KB':>9} {'returned':>9}")
    for m in measures:
        print(f"{m.name:45} {m.p50_ms:9.1f} {m.p95_ms:9.1f} {m.size_kb:9.1f} {m.returned:9}")


def _check_wide(client: httpx.Client) -> None:
    """Every answer of the wide-tree query puts the eight ports on eight different PFs."""
    path = dict(_queries(Cloud(racks=["a", "b"])))["wide tree, 8 port groups isolate, limit 1000"]
    for candidate in client.get(path).json()["allocation_requests"]:
        pfs = [rps[0] for suffix, rps in candidate["mappings"].items() if suffix.startswith("_W")]
        if len(set(pfs)) != 8:
            raise RuntimeError(f"invalid wide-tree answer: {candidate['mappings']}")


class _LeanClient:
    """A keep-alive HTTP/1.1 connection with orjson bodies: the claim run's load generator.

    The client shares the two cores with the server and the database, so it must cost as little
    as it can: httpx spends about a millisecond of CPU per request here, ``http.client`` a tenth
    of that."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self._conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self._headers = {**_HEADERS, "content-type": "application/json"}

    def request(self, method: str, path: str, body: object = None) -> tuple[int, bytes]:
        data = orjson.dumps(body) if body is not None else None
        self._conn.request(method, path, body=data, headers=self._headers)
        response = self._conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._conn.close()


def _claims(
    base: str, clients: int, seconds: float, latencies: dict[str, list[float]] | None = None
) -> tuple[int, int]:
    """Candidates then PUT /allocations from ``clients`` threads; (claims made, conflicts).

    ``latencies``, when given, gets the seconds of every GET and PUT under those two keys."""
    timed = latencies if latencies is not None else {}
    timed.setdefault("GET", [])
    timed.setdefault("PUT", [])
    made = [0] * clients
    conflicts = [0] * clients
    deadline = time.monotonic() + seconds
    query = "/allocation_candidates?resources=VCPU:2,MEMORY_MB:4096,DISK_GB:20&limit=20"

    def work(n: int) -> None:
        rng = random.Random(n)
        client = _LeanClient(base)
        try:
            while time.monotonic() < deadline:
                start = time.perf_counter()
                status, content = client.request("GET", query)
                timed["GET"].append(time.perf_counter() - start)
                if status != 200:
                    raise RuntimeError(f"candidates answered {status}: {content!r}")
                found = orjson.loads(content)["allocation_requests"]
                if not found:
                    return
                body = {
                    "allocations": rng.choice(found)["allocations"],
                    "project_id": "bench",
                    "user_id": "bench",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                }
                start = time.perf_counter()
                status, content = client.request("PUT", f"/allocations/{uuid.uuid4()}", body)
                timed["PUT"].append(time.perf_counter() - start)
                if status == 204:
                    made[n] += 1
                elif status == 409:
                    conflicts[n] += 1
                else:
                    raise RuntimeError(f"claim answered {status}: {content!r}")
        finally:
            client.close()

    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(made), sum(conflicts)


def overcommitted(db: Database) -> list[str]:
    """Every (provider, class) whose allocations exceed its capacity."""
    inv, a = schema.inventories, schema.allocations
    used = (
        sa.select(
            a.c.resource_provider_id, a.c.resource_class_id, sa.func.sum(a.c.used).label("used")
        )
        .group_by(a.c.resource_provider_id, a.c.resource_class_id)
        .subquery()
    )
    rows = sa.select(used.c.resource_provider_id, used.c.resource_class_id, used.c.used, inv).join(
        inv,
        sa.and_(
            inv.c.resource_provider_id == used.c.resource_provider_id,
            inv.c.resource_class_id == used.c.resource_class_id,
        ),
        isouter=True,
    )
    bad = []
    with db.read() as conn:
        for row in conn.execute(rows):
            capacity = (
                (row.total - row.reserved) * row.allocation_ratio if row.total is not None else 0
            )
            if row.used > capacity:
                bad.append(f"provider {row.resource_provider_id} class {row.resource_class_id}")
    return bad


def open_cloud(url: str, n: int, seed: int, reuse: bool) -> tuple[Database, Cloud]:
    """The migrated database at ``url`` holding the reference cloud: written there (the database
    must be empty) or, with ``reuse``, the one it already holds."""
    db = open_database(url)
    migrate.sync(db)
    if reuse:
        with db.read() as conn:
            racks = list(conn.scalars(sa.select(schema.placement_aggregates.c.uuid)))
        print(f"reference cloud: reused, database {db.backend}")
        return db, Cloud(racks=racks)
    start = time.perf_counter()
    cloud = build(db, n, seed)
    load = time.perf_counter() - start
    print(f"reference cloud: N={n} seed={seed}, {cloud.providers} providers, "
          f"{cloud.allocations} consumers, loaded in {load:.1f} s "
          f"({cloud.providers / load:,.0f} providers/s, bulk path); database {db.backend}")  # fmt: skip
    return db, cloud


_HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1000, help="compute-node trees")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--database-url")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--claim-seconds", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--reuse", action="store_true", help="the database already holds a reference cloud"
    )
    parser.add_argument("--claims-only", action="store_true", help="skip the timed queries")
    args = parser.parse_args(argv)
    url = args.database_url or f"sqlite:///{Path(tempfile.mkdtemp()) / 'placement.db'}"
    db, cloud = open_cloud(url, args.n, args.seed, args.reuse)
    with (
        running_placement(url, workers=args.workers) as base,
        httpx.Client(base_url=base, headers=_HEADERS, timeout=120) as client,
    ):
        if not args.claims_only:
            _print_queries(client, cloud, args.repeat)
            rss = ", ".join(f"{mb:,.0f}" for mb in worker_memory_mb(base))
            print(f"\nmemory per API worker (RSS, MB, after the queries): {rss}")
        meter = CpuMeter(base)
        start = time.perf_counter()
        latencies: dict[str, list[float]] = {}
        made, conflicts = _claims(base, args.clients, args.claim_seconds, latencies)
        spent = time.perf_counter() - start
        cpu = meter.split()
        print(f"\nclaims: {made} in {spent:.1f} s = {made / spent:.1f}/s with {args.clients} "
              f"clients, {conflicts} conflicts (409, retried by the client)")  # fmt: skip
        if made:
            per = 1000 / made
            print(f"CPU per claim: workers {cpu.workers * per:.2f} ms, database "
                  f"{cpu.database * per:.2f} ms, client {cpu.client * per:.2f} ms")  # fmt: skip
        for method, seconds in latencies.items():
            seconds.sort()
            print(f"{method} latency under load: p50 {statistics.median(seconds) * 1000:.1f} ms, "
                  f"p99 {seconds[int(len(seconds) * 0.99)] * 1000:.1f} ms")  # fmt: skip
    bad = overcommitted(db)
    if bad:
        print(f"OVER-COMMIT on {len(bad)} provider classes: {bad[:10]}")
        return 1
    print("usage within capacity on every provider")
    return 0


if __name__ == "__main__":
    sys.exit(main())

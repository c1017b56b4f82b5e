"""Boot throughput and scheduling latency on the all-in-one stack with many simulated hosts.

    .venv/bin/python -m bench.boot_bench --hosts 1000 --servers 500 --clients 16 [--qos]

Starts every service in this process (SQLite files in a temporary directory, the in-process bus),
a fleet of ``--hosts`` OVS hosts (a bandwidth bridge on "public"), then boots ``--servers``
servers from ``--clients`` threads through the Compute API, each on a network (with ``--qos``,
one whose policy asks for minimum bandwidth, so every boot has a port request group), and waits
for each to be ACTIVE. Prints the start-up time, servers per second, and the p50/p99 of the time
from POST to ACTIVE and of the scheduler's select_destinations. Ends with the audit (no leaked
allocation, port or binding; nothing over capacity) and exits 1 if it finds anything.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from a2wsgi import ASGIMiddleware

from berth import config
from berth.compute.host import fleet as fleets
from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.db import flavors, images

COMPUTE = {"openstack-api-version": "compute 2.64"}
IMAGE = "00000000-0000-0000-0000-00000000beef"
# How often each client asks whether its server is ACTIVE (the latencies are this precise).
POLL_SECONDS = 0.1


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--qos", action="store_true", help="every server's port asks for bandwidth")
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="berth-boot-"))
    fleet = fleets.parse({
        "cells": ["cell1"],
        "hosts": [{
            "name": "cn", "count": args.hosts, "vcpus": 64, "memory_mb": 262144, "disk_gb": 2000,
            "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10_000_000,
                                          "ingress_kbps": 10_000_000}}},
        }],
    })  # fmt: skip
    settings = config.Settings(data_dir=data, compute=config.ComputeSettings(host_subset_size=10))
    started = time.perf_counter()
    stack = Stack(settings, fleet, heartbeat_seconds=15)
    stack.start()
    print(f"stack up with {args.hosts} hosts in {time.perf_counter() - started:.1f} s ({data})")
    client = httpx.Client(
        transport=httpx.WSGITransport(app=ASGIMiddleware(stack.app())),
        base_url="http://berth",
        timeout=120,
    )  # type: ignore[arg-type]
    client.headers["x-auth-token"] = "admin"
    try:
        network = _setup(stack, client, args.qos)
        latencies = _boot_all(client, network, args.servers, args.clients)
        report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    finally:
        client.close()
        stack.stop()
    spent, boots, failed = latencies
    scheduling = list(stack.scheduler.latencies)
    print(f"\nboots: {len(boots)} ACTIVE, {failed} failed, in {spent:.1f} s = {len(boots) / spent:.1f} servers/s "
          f"with {args.clients} clients")  # fmt: skip
    print(
        f"POST to ACTIVE: p50 {statistics.median(boots) * 1000:.0f} ms, p99 {_percentile(boots, 0.99) * 1000:.0f} ms"
    )
    print(f"select_destinations: p50 {statistics.median(scheduling) * 1000:.1f} ms, "
          f"p99 {_percentile(scheduling, 0.99) * 1000:.1f} ms over {len(scheduling)} calls")  # fmt: skip
    if not report.clean:
        print("AUDIT FOUND:", *report.lines()[:20], sep="\n  ")
        return 1
    print("audit: nothing leaked, nothing over capacity")
    return 0 if not failed else 1


def _setup(stack: Stack, client: httpx.Client, qos: bool) -> str:
    with stack.api_db.write() as conn:
        flavors.create(conn, "bench", "bench", 2, 2048, 20)
        images.create(conn, IMAGE, {"name": "cirros"})
    net = client.post("/networking/v2.0/networks", json={"network": {
        "name": "public", "shared": True, "provider:network_type": "flat",
        "provider:physical_network": "public"}}).json()["network"]  # fmt: skip
    client.post("/networking/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/16"}})  # fmt: skip
    if qos:
        policy = client.post(
            "/networking/v2.0/qos/policies", json={"policy": {"name": "bw"}}
        ).json()["policy"]
        client.post(f"/networking/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                    json={"minimum_bandwidth_rule": {"min_kbps": 1000}})  # fmt: skip
        client.put(
            f"/networking/v2.0/networks/{net['id']}",
            json={"network": {"qos_policy_id": policy["id"]}},
        )
    return str(net["id"])


def _boot_all(
    client: httpx.Client, network: str, count: int, clients: int
) -> tuple[float, list[float], int]:
    reasons: dict[str, int] = {}

    def boot(i: int) -> float | None:
        body = {"server": {"name": f"vm{i}-{uuid.uuid4().hex[:6]}", "flavorRef": "bench",
                           "imageRef": IMAGE, "networks": [{"uuid": network}]}}  # fmt: skip
        start = time.perf_counter()
        answer = client.post("/compute/v2.1/servers", json=body, headers=COMPUTE)
        server_id = answer.json()["server"]["id"]
        while True:
            server = client.get(f"/compute/v2.1/servers/{server_id}", headers=COMPUTE).json()
            status = server["server"]["status"]
            if status == "ACTIVE":
                return time.perf_counter() - start
            if status == "ERROR":
                reason = str(server["server"].get("fault", {}).get("message", "?"))[:300]
                reasons[reason] = reasons.get(reason, 0) + 1
                return None
            time.sleep(POLL_SECONDS)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(boot, range(count)))
    spent = time.perf_counter() - started
    for reason, times in sorted(reasons.items(), key=lambda item: -item[1])[:5]:
        print(f"  {times} failed: {reason}")
    done = [r for r in results if r is not None]
    return spent, done, len(results) - len(done)


if __name__ == "__main__":
    sys.exit(main())

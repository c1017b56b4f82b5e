"""Boot throughput and scheduling latency on the all-in-one stack with many simulated hosts.

    .venv/bin/python -m bench.boot_bench --hosts 1000 --servers 500 --clients 16 [--qos]

Starts every service in this process (SQLite files in a temporary directory, the in-process bus),
a fleet of ``--hosts`` OVS hosts (a bandwidth bridge on "public"), then boots ``--servers``
servers from ``--clients`` threads through the Compute API, each on a network (with ``--qos``,
one whose policy asks for minimum bandwidth, so every boot has a port request group), and waits
for each to be ACTIVE (one watcher lists the servers that changed every 0.1 s). Prints the start-up time, servers per second, the CPU seconds per server, and the p50/p99 of the time
from POST to ACTIVE and of the scheduler's select_destinations. Ends with the audit (no leaked
allocation, port or binding; nothing over capacity) and exits 1 if it finds anything, then
the floor of a boot in this process (``bench/boot_floor.py``): the hops the boots made, each
timed when done by do-nothing pieces, and the boots' CPU against it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench import boot_floor
from bench.boots import boot_all, make_network, percentile, print_boots
from berth import config
from berth.allinone.stack import Stack, on_one_cpu
from berth.common.inprocess import InProcessTransport
from berth.compute.audit import audit
from berth.compute.db import flavors, images
from berth.compute.host import fleet as fleets

IMAGE = "00000000-0000-0000-0000-00000000beef"


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
    # As berth up runs once started (BERTH_UP__ONE_CPU=false: spread over the CPUs).
    on_one_cpu(settings)
    print(f"stack up with {args.hosts} hosts in {time.perf_counter() - started:.1f} s ({data})")
    client = httpx.Client(
        transport=InProcessTransport(stack.app()),
        base_url="http://berth",
        timeout=120,
    )
    client.headers["x-auth-token"] = "admin"
    try:
        with stack.api_db.write() as conn:
            flavors.create(conn, "bench", "bench", 2, 2048, 20)
            images.create(conn, IMAGE, {"name": "cirros"})
        network = make_network(client, "/networking", args.qos)
        hops = boot_floor.Hops()
        cpu_before = time.process_time()
        with hops.counted():
            boots = boot_all(
                client, "/compute/v2.1", network, "bench", IMAGE, args.servers, args.clients
            )
        cpu = time.process_time() - cpu_before
        report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    finally:
        client.close()
        stack.stop()
    scheduling = list(stack.scheduler.latencies)
    print_boots(boots, args.clients)
    print(f"select_destinations: p50 {statistics.median(scheduling) * 1000:.1f} ms, "
          f"p99 {percentile(scheduling, 0.99) * 1000:.1f} ms over {len(scheduling)} calls")  # fmt: skip
    # CPU per server holds still on a busy machine, where servers per second does not.
    print(f"CPU: {cpu * 1000 / args.servers:.1f} ms per server, every thread of this process "
          f"({cpu:.1f} s over the boots, the watcher's listings included)")  # fmt: skip
    if not report.clean:
        print("AUDIT FOUND:", *report.lines()[:20], sep="\n  ")
        return 1
    print("audit: nothing leaked, nothing over capacity")
    if boots.active:
        floor = boot_floor.measure(hops, args.servers)
        print(*floor.lines(len(boots.active), cpu, boots.spent), sep="\n")
    return 0 if not boots.failed else 1


if __name__ == "__main__":
    sys.exit(main())

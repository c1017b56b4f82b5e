"""Scheduling alone: request specs to claimed selections with alternates, many at once.

    .venv/bin/python -m bench.schedule_bench --hosts 1000 --requests 2000 --clients 8

Starts the all-in-one stack (``berth up``'s services in this process, SQLite files, a fleet of
``--hosts`` OVS hosts with a bandwidth bridge on "public"), then sends ``--requests`` request
specs from ``--clients`` threads straight to the scheduler's ``select_destinations`` (what the
super-conductor calls over the bus): each a flavor of 2 VCPU, 2 GiB and 20 GB plus one port
asking for 1 Mbit/s each way on "public", so every query has a port request group and every
claim writes the bridge's bandwidth too. Prints servers scheduled per second, the latency of
``select_destinations`` (p50, p99) and the CPU seconds per server, then checks every provider's
usage against its capacity and exits 1 on any over-commit.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.boots import percentile
from berth import config
from berth.allinone.stack import Stack, on_one_cpu
from berth.compute.host import fleet as fleets
from berth.compute.objects.request_spec import Flavor, Image, PortRequest, RequestSpec

FLAVOR = Flavor("bench", "bench", vcpus=2, memory_mb=2048, root_gb=20)
IMAGE = Image("00000000-0000-0000-0000-00000000beef")
PROJECT = "bench-project"


def port_request() -> PortRequest:
    """A port on "public" whose QoS policy asks for 1 Mbit/s each way, as the network service
    describes it to the compute service (port-resource-request-groups)."""
    port = str(uuid.uuid4())
    group = {
        "id": port,
        "required": ["CUSTOM_PHYSNET_PUBLIC", "CUSTOM_VNIC_TYPE_NORMAL"],
        "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000},
    }
    return PortRequest(port, {"request_groups": [group], "same_subtree": [port]})


def spec() -> RequestSpec:
    return RequestSpec(
        instance_uuids=(str(uuid.uuid4()),), project_id=PROJECT, user_id="bench",
        flavor=FLAVOR, image=IMAGE, ports=(port_request(),),
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--placement-limit", type=int, default=config.ComputeSettings().placement_limit,
        help="the scheduler's limit on allocation candidates (compute.placement_limit)",
    )  # fmt: skip
    parser.add_argument(
        "--host-subset-size", type=int, default=config.ComputeSettings().host_subset_size,
        help="pick at random among this many best hosts (compute.host_subset_size)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="berth-schedule-"))
    compute = config.ComputeSettings(
        placement_limit=args.placement_limit, host_subset_size=args.host_subset_size
    )
    settings = config.Settings(data_dir=data, compute=compute)
    fleet = fleets.parse(fleets.of_size(args.hosts), fleets.host_defaults(settings.compute))
    started = time.perf_counter()
    stack = Stack(settings, fleet, heartbeat_seconds=15)
    stack.start()
    # As berth up runs once started (BERTH_UP__ONE_CPU=false: spread over the CPUs).
    on_one_cpu(settings)
    print(f"stack up with {args.hosts} hosts in {time.perf_counter() - started:.1f} s ({data})")
    try:
        cpu_before = time.process_time()
        scheduled, failed, seconds = _schedule(stack, args.requests, args.clients)
        cpu = time.process_time() - cpu_before
        over = _over_capacity(stack)
    finally:
        stack.stop()
    latencies = list(stack.scheduler.latencies)
    print(f"scheduled {scheduled} of {args.requests} ({failed} failed) from {args.clients} clients "
          f"in {seconds:.1f} s: {scheduled / seconds:.1f} servers/s")  # fmt: skip
    print(f"select_destinations: p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms over {len(latencies)} calls")  # fmt: skip
    # CPU per server holds still on a busy machine, where servers per second does not.
    print(f"CPU: {cpu * 1000 / max(scheduled, 1):.2f} ms per server, every thread of this "
          f"process ({cpu:.2f} s, Placement's claims and answers included)")  # fmt: skip
    if over:
        print("OVER CAPACITY:", *over[:20], sep="\n  ")
        return 1
    print("usage within capacity on every provider")
    return 0 if not failed else 1


def _schedule(stack: Stack, requests: int, clients: int) -> tuple[int, int, float]:
    remaining = iter(range(requests))
    lock = threading.Lock()
    counts = {"scheduled": 0, "failed": 0}

    def client() -> None:
        while True:
            with lock:
                if next(remaining, None) is None:
                    return
            try:
                chosen = stack.scheduler.select_destinations(spec())
            except Exception as exc:  # a failure is counted and shown, never hidden
                print("failed:", exc)
                with lock:
                    counts["failed"] += 1
                continue
            with lock:
                counts["scheduled"] += len(chosen)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts["scheduled"], counts["failed"], time.perf_counter() - started


def _over_capacity(stack: Stack) -> list[str]:
    """Every provider whose usage of a class exceeds what its inventory allows."""
    client = stack.placement_client.client
    over = []
    for provider in client.get("/resource_providers").json()["resource_providers"]:
        uuid_ = provider["uuid"]
        inventories = client.get(f"/resource_providers/{uuid_}/inventories").json()["inventories"]
        usages = client.get(f"/resource_providers/{uuid_}/usages").json()["usages"]
        for rc, used in usages.items():
            inv = inventories.get(rc)
            capacity = (inv["total"] - inv["reserved"]) * inv["allocation_ratio"] if inv else 0
            if used > capacity:
                over.append(f"{provider['name']} {rc}: {used} used of {capacity}")
    return over


if __name__ == "__main__":
    sys.exit(main())

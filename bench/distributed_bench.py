"""Boot throughput of the distributed layout: ``berth up --distributed`` on a real broker and
database server, every service its own process, hosts over several agent processes.

    .venv/bin/python -m bench.distributed_bench --hosts 1000 --servers 500 --clients 16 [--qos] \\
        [--transport-url rabbit://guest:guest@127.0.0.1:5672/] \\
        [--database-url postgresql://postgres@127.0.0.1:5432] [--agents 4] [--cells 2]

The same fleet and boots as ``bench.boot_bench`` (zero spawn time), over real HTTP. Prints the
time until every host is up, servers per second, POST to ACTIVE p50/p99, and the audit; drops its
databases and virtual hosts afterwards.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import yaml

from bench.boots import boot_all, make_network, print_boots
from berth.allinone import distributed
from berth.allinone.stack import STARTER_IMAGE

ADMIN = {"x-auth-token": "admin"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=2)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--servers", type=int, default=500)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--qos", action="store_true", help="every server's port asks for bandwidth")
    parser.add_argument("--transport-url", default="rabbit://guest:guest@127.0.0.1:5672/")
    parser.add_argument("--database-url", default="postgresql://postgres@127.0.0.1:5432")
    parser.add_argument("--base-port", type=int, default=18000)
    args = parser.parse_args(argv)
    data = Path(tempfile.mkdtemp(prefix="berth-distributed-"))
    prefix = f"bench{uuid.uuid4().hex[:6]}_"
    cells = [f"cell{i}" for i in range(1, args.cells + 1)]
    fleet = {"cells": cells, "hosts": [
        {"name": f"{cell}-cn", "count": args.hosts // args.cells, "cell": cell, "vcpus": 64,
         "memory_mb": 262144, "disk_gb": 2000,
         "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10_000_000,
                                       "ingress_kbps": 10_000_000}}}}
        for cell in cells
    ]}  # fmt: skip
    (data / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    log = (data / "launcher.log").open("w")
    started = time.perf_counter()
    launcher = subprocess.Popen(
        [sys.executable, "-m", "berth.cli", "up", "--distributed",
         "--transport-url", args.transport_url, "--database-url", args.database_url,
         "--fleet", str(data / "fleet.yaml"), "--agents", str(args.agents),
         "--base-port", str(args.base_port), "--db-prefix", prefix],
        env={**os.environ, "BERTH_DATA_DIR": str(data), "BERTH_COMPUTE__HOST_SUBSET_SIZE": "10"},
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        while "berth is up" not in (data / "launcher.log").read_text():
            if launcher.poll() is not None:
                print((data / "launcher.log").read_text()[-3000:])
                return 1
            time.sleep(0.5)
        print(f"distributed layout up with {args.hosts} hosts in "
              f"{time.perf_counter() - started:.1f} s ({data})")  # fmt: skip
        compute = f"http://127.0.0.1:{args.base_port + 3}/compute/v2.1"
        network = f"http://127.0.0.1:{args.base_port + 2}"
        with httpx.Client(timeout=120, headers=ADMIN) as client:
            client.post(f"{compute}/flavors", json={"flavor": {
                "name": "bench", "id": "bench", "vcpus": 2, "ram": 2048, "disk": 20}}).raise_for_status()  # fmt: skip
            network_id = make_network(client, network, args.qos)
            boots = boot_all(
                client, compute, network_id, "bench", STARTER_IMAGE, args.servers, args.clients
            )
        print_boots(boots, args.clients)
        audit = subprocess.run(
            [sys.executable, "-m", "berth.cli", "manage", "audit",
             "--placement-url", f"http://127.0.0.1:{args.base_port + 1}", "--network-url", network],
            capture_output=True, text=True, check=False,
            env={**os.environ, "BERTH_COMPUTE__API_DATABASE_URL": distributed.database_on(args.database_url, f"{prefix}api")},
        )  # fmt: skip
        print("audit:", audit.stdout.strip()[-2000:])
        return 0 if audit.returncode == 0 and not boots.failed else 1
    finally:
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(120)
        log.close()
        distributed.drop(args.database_url, prefix, cells)


if __name__ == "__main__":
    sys.exit(main())

"""What the boot benchmarks share: a network (with a bandwidth policy for ``--qos``), servers
booted from many clients through the Compute API, and the figures printed the same way.

``client`` reaches the APIs at ``compute`` (…/compute/v2.1) and ``network`` (the Networking
API's root): in process for ``boot_bench``, over real HTTP for ``distributed_bench``.
"""

from __future__ import annotations

import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

COMPUTE = {"openstack-api-version": "compute 2.64"}
# How often each client asks whether its server is ACTIVE (the latencies are this precise).
POLL_SECONDS = 0.1


@dataclass
class Boots:
    spent: float
    # Seconds from POST to ACTIVE, per server that became ACTIVE.
    active: list[float]
    failed: int


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else 0.0


def make_network(client: httpx.Client, network: str, qos: bool) -> str:
    # A benchmark's project may own more ports than the default quota allows.
    client.put(f"{network}/v2.0/quotas/admin", json={"quota": {"port": -1}}).raise_for_status()
    net = client.post(f"{network}/v2.0/networks", json={"network": {
        "name": "public", "shared": True, "provider:network_type": "flat",
        "provider:physical_network": "public"}}).json()["network"]  # fmt: skip
    client.post(f"{network}/v2.0/subnets", json={"subnet": {
        "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/16"}})  # fmt: skip
    if qos:
        policy = client.post(
            f"{network}/v2.0/qos/policies", json={"policy": {"name": "bw"}}
        ).json()["policy"]
        client.post(f"{network}/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                    json={"minimum_bandwidth_rule": {"min_kbps": 1000}})  # fmt: skip
        client.put(
            f"{network}/v2.0/networks/{net['id']}",
            json={"network": {"qos_policy_id": policy["id"]}},
        )
    return str(net["id"])


def boot_all(
    client: httpx.Client, compute: str, network_id: str, flavor: str, image: str,
    count: int, clients: int,
) -> Boots:  # fmt: skip
    reasons: dict[str, int] = {}
    # A benchmark boots far more servers in its one project than the default quotas allow.
    unlimited = {"quota_set": {"instances": -1, "cores": -1, "ram": -1}}
    client.put(f"{compute}/os-quota-sets/admin", json=unlimited).raise_for_status()

    def boot(i: int) -> float | None:
        body = {"server": {"name": f"vm{i}-{uuid.uuid4().hex[:6]}", "flavorRef": flavor,
                           "imageRef": image, "networks": [{"uuid": network_id}]}}  # fmt: skip
        start = time.perf_counter()
        answer = client.post(f"{compute}/servers", json=body, headers=COMPUTE)
        server_id = answer.json()["server"]["id"]
        while True:
            server = client.get(f"{compute}/servers/{server_id}", headers=COMPUTE).json()
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
    return Boots(spent, done, len(results) - len(done))


def print_boots(boots: Boots, clients: int) -> None:
    print(f"\nboots: {len(boots.active)} ACTIVE, {boots.failed} failed, in {boots.spent:.1f} s = "
          f"{len(boots.active) / boots.spent:.1f} servers/s with {clients} clients")  # fmt: skip
    if boots.active:
        print(f"POST to ACTIVE: p50 {statistics.median(boots.active) * 1000:.0f} ms, "
              f"p99 {percentile(boots.active, 0.99) * 1000:.0f} ms")  # fmt: skip

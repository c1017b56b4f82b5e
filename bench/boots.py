"""What the boot benchmarks share: a network (with a bandwidth policy for ``--qos``), servers
booted from many clients through the Compute API, and the figures printed the same way.

``client`` reaches the APIs at ``compute`` (…/compute/v2.1) and ``network`` (the Networking
API's root): in process for ``boot_bench``, over real HTTP for ``distributed_bench``.
"""

from __future__ import annotations

import datetime as dt
import statistics
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

COMPUTE = {"openstack-api-version": "compute 2.64"}
# How often the watcher looks for servers that became ACTIVE (the latencies are this precise).
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
    watcher = Watcher(client, compute)

    def boot(i: int) -> float | None:
        body = {"server": {"name": f"vm{i}-{uuid.uuid4().hex[:6]}", "flavorRef": flavor,
                           "imageRef": image, "networks": [{"uuid": network_id}]}}  # fmt: skip
        start = time.perf_counter()
        answer = client.post(f"{compute}/servers", json=body, headers=COMPUTE)
        server_id = answer.json()["server"]["id"]
        status, when = watcher.wait(server_id)
        if status == "ACTIVE":
            return when - start
        server = client.get(f"{compute}/servers/{server_id}", headers=COMPUTE).json()
        reason = str(server["server"].get("fault", {}).get("message", "?"))[:300]
        reasons[reason] = reasons.get(reason, 0) + 1
        return None

    started = time.perf_counter()
    with watcher, ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(boot, range(count)))
    spent = time.perf_counter() - started
    for reason, times in sorted(reasons.items(), key=lambda item: -item[1])[:5]:
        print(f"  {times} failed: {reason}")
    done = [r for r in results if r is not None]
    return Boots(spent, done, len(results) - len(done))


class Watcher:
    """Which servers became ACTIVE or ERROR, and when it saw them, for every booting client.

    Every ``POLL_SECONDS`` it lists the servers of each of those states that changed since its
    last look (Nova's ``changes-since``), as a client waiting on many servers would, instead of
    each client asking for its own server 10 times a second: that polling (16 clients, each
    ``GET /servers/{id}`` with its two Networking calls) was a quarter of the cloud's CPU in
    this benchmark.
    """

    def __init__(self, client: httpx.Client, compute: str) -> None:
        self.client = client
        self.compute = compute
        self._seen: dict[str, tuple[str, float]] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="watcher", daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def wait(self, server_id: str) -> tuple[str, float]:
        """The server's state (ACTIVE or ERROR) and the ``perf_counter`` when it was seen."""
        with self._changed:
            self._changed.wait_for(lambda: server_id in self._seen)
            return self._seen[server_id]

    def _watch(self) -> None:
        since = dt.datetime.now(dt.UTC)
        while not self._stop.wait(POLL_SECONDS):
            # A little before the last look: a server changed while it was answered.
            looked, since = since, dt.datetime.now(dt.UTC)
            after = (looked - dt.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
            for status in ("ACTIVE", "ERROR"):
                found = self._list(status, after)
                seen_at = time.perf_counter()
                with self._changed:
                    for server_id in found:
                        self._seen.setdefault(server_id, (status, seen_at))
                    self._changed.notify_all()

    def _list(self, status: str, after: str) -> list[str]:
        found: list[str] = []
        url: str | None = f"{self.compute}/servers"
        params: dict[str, str] | None = {"status": status, "changes-since": after}
        while url:
            answer = self.client.get(url, params=params, headers=COMPUTE)
            answer.raise_for_status()
            body = answer.json()
            found += [server["id"] for server in body["servers"]]
            links = [
                link["href"] for link in body.get("servers_links", []) if link["rel"] == "next"
            ]
            url, params = (links[0], None) if links else (None, None)
        return found


def print_boots(boots: Boots, clients: int) -> None:
    print(f"\nboots: {len(boots.active)} ACTIVE, {boots.failed} failed, in {boots.spent:.1f} s = "
          f"{len(boots.active) / boots.spent:.1f} servers/s with {clients} clients")  # fmt: skip
    if boots.active:
        print(f"POST to ACTIVE: p50 {statistics.median(boots.active) * 1000:.0f} ms, "
              f"p99 {percentile(boots.active, 0.99) * 1000:.0f} ms")  # fmt: skip

"""Replay a workload through the real services: a Stack (Placement, network, compute API,
scheduler, conductors, simulated hosts) on a temporary data directory with noauth2, driven
through the APIs in process.

The clock is simulated: actions run in their time order, and each waits until its server is
ACTIVE or ERROR (or gone, for a delete) before the clock moves on, so nothing sleeps for the
workload's gaps and a run takes as long as its boots take to schedule.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from berth import config
from berth.allinone.stack import STARTER_IMAGE, Stack
from berth.common.inprocess import InProcessTransport
from berth.sim.metrics import Sample, read_providers, sample
from berth.sim.scenario import Scenario
from berth.sim.workload import Boot, Delete, Network, QosPolicy, Workload

__all__ = ["Failure", "Run", "SimulationError", "run"]

COMPUTE = {"openstack-api-version": "compute 2.64"}
# How often a waiting action asks again (wall time; the servers build in this process).
POLL_SECONDS = 0.002
# A server that is neither ACTIVE nor ERROR after this long is a fault of the run, not a result.
WAIT_SECONDS = 60.0


class SimulationError(RuntimeError):
    """The stack refused a call the workload needs, or a server did not settle in time: the
    run cannot go on (the message, and the stack's log, say why)."""


@dataclass(frozen=True)
class Failure:
    server: str
    time: float
    message: str

    @property
    def reason(self) -> str:
        """The fault with its counts blanked, so that failures for one reason group together:
        ``No valid host was found. N/N hosts are available: Placement returned N
        (insufficient VCPU: N)``."""
        return re.sub(r"\b\d+\b", "N", self.message)

    @property
    def codes(self) -> tuple[str, ...]:
        """The diagnosis' reasons: Placement's shortfalls (``insufficient VCPU``) and the
        filters' reason codes (``ServerGroupAntiAffinityFilter: same_group_host``)."""
        found = re.findall(r"(?:insufficient|missing trait|forbidden trait) \w+", self.message)
        for stage, detail in re.findall(r"(\w+) removed \d+ \(([^)]*)\)", self.message):
            found += [f"{stage}: {code}" for code in re.findall(r"([\w.-]+): \d+", detail)]
        return tuple(dict.fromkeys(found))


@dataclass
class Run:
    scenario: str
    hosts: int
    samples: list[Sample] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    deleted: int = 0
    wall_seconds: float = 0.0
    scheduling_ms: list[float] = field(default_factory=list)

    @property
    def requested(self) -> int:
        return len(self.accepted) + len(self.failures)

    @property
    def acceptance(self) -> float:
        return len(self.accepted) / self.requested if self.requested else 0.0

    def failures_by_reason(self) -> list[tuple[str, int, tuple[str, ...]]]:
        """(reason, failures, its codes), most frequent first."""
        counts = Counter(f.reason for f in self.failures)
        codes = {f.reason: f.codes for f in self.failures}
        return [(reason, n, codes[reason]) for reason, n in counts.most_common()]

    def summary(self) -> dict[str, Any]:
        series = sorted({s for sample in self.samples for s in sample.capacity})
        last = self.samples[-1] if self.samples else None
        return {
            "scenario": self.scenario,
            "hosts": self.hosts,
            "boots": self.requested,
            "accepted": len(self.accepted),
            "failed": len(self.failures),
            "acceptance_rate": round(self.acceptance, 4),
            "deleted": self.deleted,
            "failures_by_reason": [
                {"reason": r, "count": n, "codes": list(c)} for r, n, c in self.failures_by_reason()
            ],
            "peak_utilisation": {
                s: round(max(x.utilisation(s) for x in self.samples), 4) for s in series
            },
            "final_utilisation": {s: round(last.utilisation(s), 4) for s in series} if last else {},
            "mean_fragmentation": {
                rc: round(statistics.fmean(x.fragmentation.get(rc, 0.0) for x in self.samples), 4)
                for rc in ("VCPU", "MEMORY_MB")
            } if self.samples else {},
            "simulated_seconds": last.time if last else 0.0,
            "wall_seconds": round(self.wall_seconds, 2),
            "scheduling_ms_p50": round(statistics.median(self.scheduling_ms), 2)
            if self.scheduling_ms else None,
        }  # fmt: skip


def run(scenario: Scenario, workload: Workload, progress: Callable[[str], None] = print) -> Run:
    """Replay ``workload`` on ``scenario`` and measure it after each simulated instant."""
    started = time.perf_counter()
    with _stack(scenario) as (stack, client, placement):
        result = Run(scenario.name, len(scenario.fleet.hosts))
        driver = _Driver(client, workload, result)
        providers = read_providers(placement)
        largest = workload.largest_flavor()
        need = {"VCPU": largest.vcpus, "MEMORY_MB": largest.memory_mb, "DISK_GB": largest.disk_gb}

        def measure(now: float) -> None:
            counts = (len(driver.servers), len(result.accepted), len(result.failures))
            result.samples.append(sample(placement, providers, need, now, counts))

        measure(0.0)
        actions = workload.actions
        for i, action in enumerate(actions):
            driver.do(action.time, action.what)
            if i + 1 == len(actions) or actions[i + 1].time != action.time:
                measure(action.time)
        progress(
            f"{scenario.name}: {len(result.accepted)}/{result.requested} boots accepted, "
            f"{result.deleted} deleted"
        )
        result.scheduling_ms = [s * 1000 for s in stack.scheduler.latencies]
    result.wall_seconds = time.perf_counter() - started
    return result


@contextmanager
def _stack(scenario: Scenario) -> Iterator[tuple[Stack, httpx.Client, httpx.Client]]:
    """The started stack, a client of its APIs (each under its prefix) and one of Placement's."""
    with tempfile.TemporaryDirectory(prefix="berth-sim-") as data:
        settings = config.Settings(data_dir=Path(data), compute=scenario.compute)
        stack = Stack(settings, scenario.fleet)
        stack.start()
        transport = InProcessTransport(stack.app())
        token = {"x-auth-token": "admin"}
        client = httpx.Client(
            transport=transport, base_url="http://berth", headers=token, timeout=120
        )
        placement = httpx.Client(
            transport=transport, base_url="http://berth/placement", headers=token, timeout=120
        )
        try:
            yield stack, client, placement
        finally:
            placement.close()
            client.close()
            stack.stop()


class _Driver:
    """Turns the workload's actions into API calls and waits for their outcome."""

    def __init__(self, client: httpx.Client, workload: Workload, result: Run) -> None:
        self.client = client
        self.workload = workload
        self.result = result
        # Server name -> (id, ports made for it), while it is ACTIVE.
        self.servers: dict[str, tuple[str, list[str]]] = {}
        self._setup()

    def _call(
        self, method: str, url: str, body: Any = None, ok: tuple[int, ...] = (200, 201, 202, 204)
    ) -> Any:
        answer = self.client.request(method, url, json=body, headers=COMPUTE)
        if answer.status_code not in ok:
            raise SimulationError(f"{method} {url}: {answer.status_code} {answer.text[:500]}")
        return answer.json() if answer.content else None

    def _setup(self) -> None:
        """Quotas that never refuse (only the scheduler should), then the workload's flavors,
        QoS policies, networks and server groups."""
        unlimited = ("instances", "cores", "ram", "server_groups", "server_group_members")
        self._call(
            "PUT", "/compute/v2.1/os-quota-sets/admin", {"quota_set": dict.fromkeys(unlimited, -1)}
        )
        self._call(
            "PUT",
            "/networking/v2.0/quotas/admin",
            {"quota": dict.fromkeys(("port", "network", "subnet"), -1)},
        )
        for name, flavor in self.workload.file.flavors.items():
            self._call(
                "POST",
                "/compute/v2.1/flavors",
                {
                    "flavor": {
                        "name": name,
                        "id": f"sim-{name}",
                        "vcpus": flavor.vcpus,
                        "ram": flavor.memory_mb,
                        "disk": flavor.disk_gb,
                    }
                },
            )
        self.policies = {
            name: self._qos_policy(name, policy)
            for name, policy in self.workload.file.qos_policies.items()
        }
        self.networks = {
            name: self._network(i, name, network)
            for i, (name, network) in enumerate(self.workload.file.networks.items())
        }
        self.groups = {
            name: self._call("POST", "/compute/v2.1/os-server-groups", {
                "server_group": {"name": name, "policy": policy}})["server_group"]["id"]
            for name, policy in self.workload.file.server_groups.items()
        }  # fmt: skip

    def _qos_policy(self, name: str, policy: QosPolicy) -> str:
        made = self._call("POST", "/networking/v2.0/qos/policies", {"policy": {"name": name}})
        rules = f"/networking/v2.0/qos/policies/{made['policy']['id']}"
        if policy.min_kbps is not None:
            self._call(
                "POST",
                f"{rules}/minimum_bandwidth_rules",
                {
                    "minimum_bandwidth_rule": {
                        "min_kbps": policy.min_kbps,
                        "direction": policy.direction,
                    }
                },
            )
        if policy.min_kpps is not None:
            self._call(
                "POST",
                f"{rules}/minimum_packet_rate_rules",
                {
                    "minimum_packet_rate_rule": {
                        "min_kpps": policy.min_kpps,
                        "direction": policy.packet_rate_direction,
                    }
                },
            )
        return str(made["policy"]["id"])

    def _network(self, index: int, name: str, network: Network) -> str:
        """A shared network with one subnet (10.<index>.0.0/16); flat on its physical network."""
        body: dict[str, Any] = {"name": name, "shared": True}
        if network.physnet:
            body |= {"provider:network_type": "flat", "provider:physical_network": network.physnet}
        net = self._call("POST", "/networking/v2.0/networks", {"network": body})["network"]
        self._call(
            "POST",
            "/networking/v2.0/subnets",
            {"subnet": {"network_id": net["id"], "ip_version": 4, "cidr": f"10.{index}.0.0/16"}},
        )
        if network.qos_policy:
            self._call(
                "PUT",
                f"/networking/v2.0/networks/{net['id']}",
                {"network": {"qos_policy_id": self.policies[network.qos_policy]}},
            )
        return str(net["id"])  # fmt: skip

    def do(self, now: float, what: Boot | Delete) -> None:
        if isinstance(what, Boot):
            self._boot(now, what)
        else:
            self._delete(what)

    def _boot(self, now: float, boot: Boot) -> None:
        spec = boot.spec
        ports = [
            self._call("POST", "/networking/v2.0/ports", {"port": {
                "name": f"{boot.name}-{n}", "network_id": self.networks[port.network],
                **({"qos_policy_id": self.policies[port.qos_policy]} if port.qos_policy else {})}})["port"]["id"]
            for n, port in enumerate(spec.ports)
        ]  # fmt: skip
        networks: Any = [{"uuid": self.networks[n]} for n in spec.networks] + [
            {"port": p} for p in ports
        ]
        body: dict[str, Any] = {"server": {
            "name": boot.name, "flavorRef": f"sim-{spec.flavor}", "imageRef": STARTER_IMAGE,
            "networks": networks or "none"}}  # fmt: skip
        if spec.group:
            body["os:scheduler_hints"] = {"group": self.groups[spec.group]}
        server_id = self._call("POST", "/compute/v2.1/servers", body)["server"]["id"]
        server = self._settle(server_id)
        if server["status"] == "ACTIVE":
            self.servers[boot.name] = (server_id, ports)
            self.result.accepted.append(boot.name)
            return
        fault = server.get("fault") or {}
        self.result.failures.append(Failure(boot.name, now, str(fault.get("message", "no fault"))))
        self._call("DELETE", f"/compute/v2.1/servers/{server_id}", ok=(204, 404))
        for port in ports:
            self._call("DELETE", f"/networking/v2.0/ports/{port}", ok=(204, 404))

    def _settle(self, server_id: str) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            server = self._call("GET", f"/compute/v2.1/servers/{server_id}")["server"]
            if server["status"] in ("ACTIVE", "ERROR"):
                return server  # type: ignore[no-any-return]
            time.sleep(POLL_SECONDS)
        raise SimulationError(f"server {server_id} still building after {WAIT_SECONDS:g} s")

    def _delete(self, delete: Delete) -> None:
        """Delete a server the workload booted; one that failed (or is gone) has nothing to free."""
        if delete.name not in self.servers:
            return
        server_id, ports = self.servers.pop(delete.name)
        self._call("DELETE", f"/compute/v2.1/servers/{server_id}")
        deadline = time.monotonic() + WAIT_SECONDS
        while (
            self.client.get(f"/compute/v2.1/servers/{server_id}", headers=COMPUTE).status_code
            != 404
        ):
            if time.monotonic() > deadline:
                raise SimulationError(f"server {server_id} not gone after {WAIT_SECONDS:g} s")
            time.sleep(POLL_SECONDS)
        for port in ports:
            self._call("DELETE", f"/networking/v2.0/ports/{port}", ok=(204, 404))
        self.result.deleted += 1

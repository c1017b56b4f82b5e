"""The CPU cost of the Placement writes that register a fleet, in process as ``berth up`` makes them.

    .venv/bin/python -m bench.placement_writes [--hosts 1000] [--database-url URL] [--profile]

Builds Placement's app (``build_placement_app``) on a fresh SQLite file (or an empty database at
``--database-url``) and calls it through the in-process client the all-in-one stack uses
(``in_process_client(..., inline=True)``: the app runs in the caller's thread) as noauth2's
service user, named in the call (``in_process_caller``) as ``berth up``'s services are. For
each host it writes what the compute host and the network reporter write:

- the compute node: ``POST /resource_providers``, ``PUT .../traits``, ``PUT .../inventories``;
- the OVS agent's provider under it and its bridge's provider under that: ``POST
  /resource_providers`` with a parent and ``PUT .../traits`` each, their inventories through
  ``POST /reshaper`` 500 providers at a time;
- after each phase, one ``GET /resource_providers`` (the clients read the generations back so;
  it brings the candidate index up to date with the writes).

Prints, per kind of call, the calls made, the milliseconds per call (wall, this process's CPU,
and the CPU inside Placement's app: the rest is the client's and the in-process hop's), and the
providers registered per second overall. One thread: the figures are the CPU a
call costs, which concurrency does not divide on one interpreter. ``--profile`` runs only the
writes, for ``py-spy record`` to watch.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import procstat
from berth.compute.clients.http import in_process_client
from berth.config import Settings
from berth.identity.service_user import in_process_caller
from berth.placement.app import build_app as build_placement_app
from berth.placement.service import PlacementService
from berth.placement.store import migrate

MICROVERSION = "placement 1.39"
RESHAPE_BATCH = 500
COMPUTE_TRAITS = ["COMPUTE_NODE", "COMPUTE_NET_ATTACH_INTERFACE", "HW_CPU_X86_AVX2"]
AGENT_TRAITS = ["CUSTOM_VNIC_TYPE_NORMAL"]
BRIDGE_TRAITS = ["CUSTOM_PHYSNET_PUBLIC", "CUSTOM_VNIC_TYPE_NORMAL"]


def _inventory(total: int, reserved: int = 0, ratio: float = 1.0) -> dict[str, Any]:
    return {"total": total, "reserved": reserved, "min_unit": 1, "max_unit": total,
            "step_size": 1, "allocation_ratio": ratio}  # fmt: skip


COMPUTE_INVENTORIES = {
    "VCPU": _inventory(32, 0, 16.0),
    "MEMORY_MB": _inventory(131072, 512, 1.5),
    "DISK_GB": _inventory(2000, 0, 1.0),
}
AGENT_INVENTORIES = {"NET_PACKET_RATE_KILOPACKET_PER_SEC": _inventory(1_000_000)}
BRIDGE_INVENTORIES = {
    "NET_BW_EGR_KILOBIT_PER_SEC": _inventory(10_000_000),
    "NET_BW_IGR_KILOBIT_PER_SEC": _inventory(10_000_000),
}


@dataclass
class Timing:
    """The calls of one kind: how many, and their wall, CPU and in-app CPU seconds all told."""

    calls: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    app: float = 0.0

    def row(self, name: str) -> str:
        per_call = [1000 * t / max(self.calls, 1) for t in (self.wall, self.cpu, self.app)]
        return f"{name:<34} {self.calls:>7}" + "".join(f" {t:>10.3f}" for t in per_call)


@dataclass
class Timings:
    kinds: dict[str, Timing] = field(default_factory=dict)
    # CPU seconds spent inside Placement's app (the rest of a call is the client's and the
    # in-process transport's), added to by ``TimedApp``.
    in_app: float = 0.0

    @contextmanager
    def timed(self, kind: str) -> Iterator[None]:
        wall, cpu, app = time.perf_counter(), time.process_time(), self.in_app
        yield
        timing = self.kinds.setdefault(kind, Timing())
        timing.calls += 1
        timing.wall += time.perf_counter() - wall
        timing.cpu += time.process_time() - cpu
        timing.app += self.in_app - app


class TimedApp:
    """Placement's ASGI app, its CPU time counted (it runs in the caller's thread: inline)."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.timings = Timings()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        started = time.process_time()
        try:
            await self.app(scope, receive, send)
        finally:
            self.timings.in_app += time.process_time() - started


class Writer:
    """Registers hosts' providers through one in-process client, as the all-in-one stack does."""

    def __init__(self, client: httpx.Client, timings: Timings) -> None:
        self.client = client
        self.timings = timings

    def call(self, kind: str, method: str, path: str, body: Any = None) -> httpx.Response:
        with self.timings.timed(kind):
            answer = self.client.request(method, path, json=body)
        if not answer.is_success:
            raise SystemExit(f"{method} {path}: {answer.status_code} {answer.text[:500]}")
        return answer

    def create(self, kind: str, provider: str, name: str, parent: str | None = None) -> int:
        body: dict[str, Any] = {"uuid": provider, "name": name}
        if parent is not None:
            body["parent_provider_uuid"] = parent
        return int(self.call(kind, "POST", "/resource_providers", body).json()["generation"])

    def traits(self, kind: str, provider: str, traits: list[str], generation: int) -> int:
        body = {"traits": traits, "resource_provider_generation": generation}
        answer = self.call(kind, "PUT", f"/resource_providers/{provider}/traits", body)
        return int(answer.json()["resource_provider_generation"])

    def inventories(self, provider: str, inventories: dict[str, Any], generation: int) -> None:
        body = {"inventories": inventories, "resource_provider_generation": generation}
        self.call("PUT inventories (compute node)", "PUT",
                  f"/resource_providers/{provider}/inventories", body)  # fmt: skip

    def reshape(self, stocks: dict[str, tuple[dict[str, Any], int]]) -> None:
        uuids = list(stocks)
        for start in range(0, len(uuids), RESHAPE_BATCH):
            body = {
                "inventories": {
                    u: {"resource_provider_generation": stocks[u][1], "inventories": stocks[u][0]}
                    for u in uuids[start : start + RESHAPE_BATCH]
                },
                "allocations": {},
            }
            self.call(f"POST /reshaper (up to {RESHAPE_BATCH})", "POST", "/reshaper", body)

    def listing(self) -> int:
        answer = self.call("GET /resource_providers (listing)", "GET", "/resource_providers")
        return len(answer.json()["resource_providers"])


def register(writer: Writer, hosts: int, prefix: str, listings: bool = True) -> None:
    """What ``berth up --hosts N`` writes to Placement for its hosts: the compute nodes first,
    then the network reporter's providers."""
    for trait in sorted({*AGENT_TRAITS, *BRIDGE_TRAITS}):
        writer.call("PUT /traits/CUSTOM_*", "PUT", f"/traits/{trait}")
    nodes = [(str(uuid.uuid4()), f"{prefix}-{i:05d}") for i in range(hosts)]
    for node, name in nodes:
        generation = writer.create("POST /resource_providers (root)", node, name)
        generation = writer.traits("PUT traits (compute node)", node, COMPUTE_TRAITS, generation)
        writer.inventories(node, COMPUTE_INVENTORIES, generation)
    if listings:
        writer.listing()
    stocks: dict[str, tuple[dict[str, Any], int]] = {}
    for node, name in nodes:
        agent, bridge = str(uuid.uuid4()), str(uuid.uuid4())
        kind = "POST /resource_providers (child)"
        generation = writer.create(kind, agent, f"{name}:Open vSwitch agent", node)
        generation = writer.traits("PUT traits (network)", agent, AGENT_TRAITS, generation)
        stocks[agent] = (AGENT_INVENTORIES, generation)
        generation = writer.create(kind, bridge, f"{name}:Open vSwitch agent:br-ex", agent)
        generation = writer.traits("PUT traits (network)", bridge, BRIDGE_TRAITS, generation)
        stocks[bridge] = (BRIDGE_INVENTORIES, generation)
    writer.reshape(stocks)
    if listings:
        writer.listing()


def placement_client(database_url: str) -> tuple[httpx.Client, PlacementService, TimedApp]:
    settings = Settings()
    service = PlacementService.from_settings(settings.placement, database_url)
    migrate.sync(service.db)
    app = TimedApp(build_placement_app(service))
    # As berth up's services call it: in the caller's thread, naming themselves (noauth2's
    # service user, with the service role) rather than carrying a token.
    caller = in_process_caller("noauth2", "admin", settings.keystone_authtoken, {})
    assert caller is not None
    client = in_process_client(app, caller, "http://placement", inline=True)
    client.headers["openstack-api-version"] = MICROVERSION
    return client, service, app


def _fresh_url(database_url: str | None) -> str:
    if database_url:
        return database_url
    return f"sqlite:///{Path(tempfile.mkdtemp(prefix='berth-pwrites-')) / 'placement.db'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--database-url", help="an empty database (default: a fresh SQLite file)")
    parser.add_argument("--profile", action="store_true", help="writes only, no listings")
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, {procstat.cpu_model()}")
    client, service, app = placement_client(_fresh_url(args.database_url))
    # The first calls load the app's lazy parts (schemas' validators, the index): not measured.
    register(Writer(client, app.timings), 2, "warm", listings=not args.profile)
    timings = app.timings = Timings()
    writer = Writer(client, timings)
    wall, cpu = time.perf_counter(), time.process_time()
    register(writer, args.hosts, "host", listings=not args.profile)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    providers = 3 * args.hosts
    print(f"\n{args.hosts} hosts, {providers} providers, {service.db.backend}")
    print(f"{'call':<34} {'calls':>7} {'wall ms':>10} {'cpu ms':>10} {'in app ms':>10}")
    for kind, timing in timings.kinds.items():
        print(timing.row(kind))
    print(f"\nall told: {wall:.2f} s wall, {cpu:.2f} s CPU ({timings.in_app:.2f} s in the app); "
          f"{providers / wall:.0f} providers/s, {1000 * cpu / providers:.3f} ms CPU per provider "
          f"({1000 * timings.in_app / providers:.3f} in the app)")  # fmt: skip
    print(f"candidate index: {service.index.rebuilds} rebuilds, {service.index.updates} updates")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

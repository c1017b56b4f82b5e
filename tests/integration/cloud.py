"""A distributed Berth for tests: ``berth up --distributed`` on the machine's RabbitMQ and
PostgreSQL (``BERTH_TEST_RABBIT_URL``, ``BERTH_TEST_POSTGRESQL_URL``), every service its own
process (two copies of the scheduler and of each conductor), two cells, hosts over two agent
processes, with short timeouts. Each start has its own databases and virtual hosts, dropped when
it stops.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import yaml

from berth.allinone import distributed
from berth.common.db import normalise_url

RABBIT = os.environ.get("BERTH_TEST_RABBIT_URL")
POSTGRESQL = os.environ.get("BERTH_TEST_POSTGRESQL_URL")
needs_servers = pytest.mark.skipif(
    not (RABBIT and POSTGRESQL),
    reason="needs BERTH_TEST_RABBIT_URL and BERTH_TEST_POSTGRESQL_URL (a broker and a server)",
)

COMPUTE = {"x-auth-token": "admin", "openstack-api-version": "compute 2.64"}
PLACEMENT = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
ADMIN = {"x-auth-token": "admin"}
BRIDGE = {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1_000_000,
                                "ingress_kbps": 1_000_000}}, "tunnel_types": ["vxlan"]}  # fmt: skip
# "bad" has the most memory, so the weighers try it first; its spawns always fail.
FLEET = {
    "cells": ["cell1", "cell2"],
    "hosts": [
        {"name": "bad", "cell": "cell1", "memory_mb": 262144, "ovs": BRIDGE,
         "driver": {"fail": "always"}},
        {"name": "c1-", "count": 2, "cell": "cell1", "ovs": BRIDGE},
        {"name": "c2-", "count": 2, "cell": "cell2", "ovs": BRIDGE},
    ],
}  # fmt: skip
SETTINGS = {
    "BERTH_COMPUTE__REPORT_INTERVAL": "1",
    "BERTH_COMPUTE__SERVICE_DOWN_TIME": "6",
    "BERTH_COMPUTE__RPC_RESPONSE_TIMEOUT": "5",
    "BERTH_COMPUTE__STUCK_BUILD_TIMEOUT": "10",
    "BERTH_COMPUTE__GRACEFUL_SHUTDOWN_TIMEOUT": "5",
}


@dataclass
class Cloud:
    data: Path
    prefix: str
    compute: str
    network: str
    placement: str
    client: httpx.Client

    def boot(
        self, name: str, networks: Any, hints: dict[str, Any] | None = None, **extra: Any
    ) -> str:
        body: dict[str, Any] = {"server": {"name": name, "flavorRef": "1", "networks": networks,
                           "imageRef": "8b2d4e07-6c5f-4d3a-9e6b-2f3c1a0d9e11", **extra}}  # fmt: skip
        if hints:
            body["os:scheduler_hints"] = hints
        answer = self.client.post(f"{self.compute}/servers", json=body, headers=COMPUTE)
        assert answer.status_code == 202, answer.text
        return str(answer.json()["server"]["id"])

    def wait(self, server_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = self.client.get(f"{self.compute}/servers/{server_id}", headers=COMPUTE)
            found = server.json()["server"]
            if found["status"] in ("ACTIVE", "ERROR"):
                return found  # type: ignore[no-any-return]
            time.sleep(0.2)
        raise AssertionError(f"{server_id} still {found['status']} after {timeout} s")

    def delete(self, server_id: str) -> None:
        answer = self.client.delete(f"{self.compute}/servers/{server_id}", headers=COMPUTE)
        assert answer.status_code == 204, answer.text
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (
                self.client.get(f"{self.compute}/servers/{server_id}", headers=COMPUTE).status_code
                == 404
            ):
                return
            time.sleep(0.2)
        raise AssertionError(f"{server_id} not deleted after 60 s")

    def allocations(self, server_id: str) -> dict[str, Any]:
        answer = self.client.get(f"{self.placement}/allocations/{server_id}", headers=PLACEMENT)
        return answer.json()["allocations"]  # type: ignore[no-any-return]

    def ports_of(self, server_id: str) -> list[dict[str, Any]]:
        answer = self.client.get(
            f"{self.network}/v2.0/ports", params={"device_id": server_id}, headers=ADMIN
        )
        return answer.json()["ports"]  # type: ignore[no-any-return]

    def audit(self) -> str:
        env = {**os.environ, **_environment(self.data, self.prefix)}
        done = subprocess.run(
            [sys.executable, "-m", "berth.cli", "manage", "audit",
             "--placement-url", self.placement, "--network-url", self.network],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def pid(self, *service: str) -> int:
        """The running process of this cloud whose command line ends with ``service``."""
        return self.pids(*service)[0]

    def pids(self, *service: str) -> list[int]:
        """Every running process of this cloud whose command line ends with ``service``."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                command = (entry / "cmdline").read_bytes().split(b"\0")
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            words = [w.decode() for w in command if w]
            if (
                words[-len(service) :] == list(service)
                and f"BERTH_DATA_DIR={self.data}".encode() in environ
            ):
                found.append(int(entry.name))
        assert found, f"no process for {' '.join(service)}"
        return found


def _environment(data: Path, prefix: str) -> dict[str, str]:
    return {"BERTH_DATA_DIR": str(data),
            "BERTH_COMPUTE__API_DATABASE_URL": distributed.database_on(str(POSTGRESQL), f"{prefix}api"), **SETTINGS}  # fmt: skip


def _base_port() -> int:
    while True:
        base = random.randint(20000, 40000)
        if all(_free(base + i) for i in (1, 2, 3)):
            return base


def _free(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def distributed_cloud(data: Path) -> Iterator[Cloud]:
    """The layout up, its processes' data and logs in ``data``; stopped and dropped afterwards."""
    prefix = f"bt{uuid.uuid4().hex[:8]}_"
    fleet = data / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    base = _base_port()
    server = (
        sa.make_url(normalise_url(str(POSTGRESQL)))
        .set(database="")
        .render_as_string(hide_password=False)
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BERTH_")}
    env.update({"BERTH_DATA_DIR": str(data), **SETTINGS})
    out = (data / "launcher.log").open("w")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "berth.cli", "up", "--distributed", "--transport-url", str(RABBIT),
         "--database-url", server, "--fleet", str(fleet), "--agents", "2",
         "--base-port", str(base), "--db-prefix", prefix, "--copies", "2"],
        env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while "berth is up" not in (data / "launcher.log").read_text():
            if launcher.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("the distributed layout did not come up:\n" + _logs(data))
            time.sleep(0.5)
        with httpx.Client(timeout=60) as client:
            cloud = Cloud(
                data, prefix, f"http://127.0.0.1:{base + 3}/compute/v2.1", f"http://127.0.0.1:{base + 2}",
                f"http://127.0.0.1:{base + 1}", client,
            )  # fmt: skip
            # The tests boot more servers in one project than upstream's default quotas allow.
            unlimited = {"quota_set": {"instances": -1, "cores": -1, "ram": -1}}
            client.put(
                f"{cloud.compute}/os-quota-sets/admin", json=unlimited, headers=ADMIN
            ).raise_for_status()
            yield cloud
    finally:
        launcher.send_signal(signal.SIGTERM)
        try:
            launcher.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
        out.close()
        distributed.drop(str(POSTGRESQL), prefix, FLEET["cells"])


def _logs(data: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(data.rglob("*.log")))


def make_public_network(cloud: Cloud) -> str:
    net = cloud.client.post(f"{cloud.network}/v2.0/networks", headers=ADMIN, json={"network": {
        "name": "public", "shared": True, "provider:network_type": "flat",
        "provider:physical_network": "public"}}).json()["network"]["id"]  # fmt: skip
    cloud.client.post(f"{cloud.network}/v2.0/subnets", headers=ADMIN, json={"subnet": {
        "network_id": net, "ip_version": 4, "cidr": "192.0.2.0/24"}}).raise_for_status()  # fmt: skip
    return str(net)

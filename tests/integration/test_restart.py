"""``berth up`` stopped with SIGTERM while servers boot, then started again on the same data
directory: every server ends ACTIVE or ERROR, and the audit finds nothing held by a dead build."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.integration.server import running_berth_up

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "compute 2.64"}
FLEET = {
    "cells": ["cell1"],
    "hosts": [{"name": "cn", "count": 3, "vcpus": 32, "memory_mb": 65536, "disk_gb": 500,
               "ovs": {"bridges": {"br-ex": {"physnets": ["public"]}}},
               "driver": {"spawn_seconds": 1.5}}],
}  # fmt: skip


def _boot(url: str, network: str, count: int) -> list[str]:
    """``count`` servers, each its own request."""
    body = {
        "server": {"name": "vm", "flavorRef": "1", "imageRef": "8b2d4e07-6c5f-4d3a-9e6b-2f3c1a0d9e11",
                   "networks": [{"uuid": network}]},
    }  # fmt: skip
    servers = []
    for _ in range(count):
        answer = httpx.post(f"{url}/compute/v2.1/servers", json=body, headers=HEADERS, timeout=30)
        assert answer.status_code == 202, answer.text
        servers.append(answer.json()["server"]["id"])
    return servers


def _statuses(url: str) -> dict[str, str]:
    answer = httpx.get(f"{url}/compute/v2.1/servers/detail", headers=HEADERS, timeout=30)
    return {s["id"]: s["status"] for s in answer.json()["servers"]}


def test_servers_booting_when_berth_up_stops_do_not_stay_in_build(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    data = tmp_path / "data"
    with running_berth_up(str(data), str(fleet)) as url:
        network = httpx.post(
            f"{url}/networking/v2.0/networks", headers=HEADERS, timeout=30,
            json={"network": {"name": "public", "shared": True, "provider:network_type": "flat",
                              "provider:physical_network": "public"}},
        ).json()["network"]["id"]  # fmt: skip
        httpx.post(
            f"{url}/networking/v2.0/subnets", headers=HEADERS, timeout=30,
            json={"subnet": {"network_id": network, "cidr": "192.0.2.0/24", "ip_version": 4}},
        ).raise_for_status()  # fmt: skip
        # Twelve servers in one project: more than upstream's default quota of ten.
        unlimited = {"quota_set": {"instances": -1, "cores": -1, "ram": -1}}
        httpx.put(
            f"{url}/compute/v2.1/os-quota-sets/admin", json=unlimited, headers=HEADERS, timeout=30
        ).raise_for_status()
        servers = _boot(url, network, 12)
        time.sleep(0.5)
        assert "BUILD" in _statuses(url).values()
    # SIGTERM came with spawns in flight; the stop let some finish and abandoned the rest.
    with running_berth_up(str(data), str(fleet)) as url:
        deadline = time.monotonic() + 60
        while "BUILD" in (found := _statuses(url)).values() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert set(found) == set(servers)
        assert set(found.values()) <= {"ACTIVE", "ERROR"}, found
        env = {**os.environ, "BERTH_DATA_DIR": str(data)}
        audit = subprocess.run(
            [sys.executable, "-m", "berth.cli", "manage", "audit",
             "--placement-url", f"{url}/placement", "--network-url", f"{url}/networking"],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stdout + audit.stderr

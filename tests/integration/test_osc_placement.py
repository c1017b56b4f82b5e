"""The real client: osc-placement (the `openstack` CLI) against a running Berth placement server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from tests.integration.server import running_placement

# python-openstackclient and osc-placement are test dependencies, installed next to this Python.
OPENSTACK = Path(sys.executable).parent / "openstack"


def _cli(endpoint: str, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env["OS_PLACEMENT_API_VERSION"] = "1.39"
    cmd = [
        str(OPENSTACK), "--os-auth-type", "admin_token", "--os-token", "admin",
        "--os-endpoint", endpoint, *args,
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout) if "-f" in args else done.stdout


def test_provider_tree_inventory_traits_aggregates_allocations(tmp_path: Path) -> None:
    with running_placement(f"sqlite:///{tmp_path / 'placement.db'}") as url:
        root = _cli(url, "resource", "provider", "create", "cn1", "-f", "json")
        nic = _cli(
            url, "resource", "provider", "create", "cn1:nic",
            "--parent-provider", root["uuid"], "-f", "json",
        )  # fmt: skip
        assert nic["root_provider_uuid"] == root["uuid"]
        _cli(
            url, "resource", "provider", "inventory", "set", root["uuid"],
            "--resource", "VCPU=16", "--resource", "MEMORY_MB=65536", "-f", "json",
        )  # fmt: skip
        _cli(
            url, "resource", "provider", "inventory", "set", nic["uuid"],
            "--resource", "NET_BW_EGR_KILOBIT_PER_SEC=10000000", "-f", "json",
        )  # fmt: skip
        _cli(url, "trait", "create", "CUSTOM_PHYSNET_PUBLIC")
        traits = _cli(
            url, "resource", "provider", "trait", "set", nic["uuid"],
            "--trait", "CUSTOM_PHYSNET_PUBLIC", "-f", "json",
        )  # fmt: skip
        assert [t["name"] for t in traits] == ["CUSTOM_PHYSNET_PUBLIC"]
        aggregate = str(uuid.uuid4())
        aggs = _cli(
            url, "resource", "provider", "aggregate", "set", root["uuid"],
            "--aggregate", aggregate, "--generation", "1", "-f", "json",
        )  # fmt: skip
        assert [a["uuid"] for a in aggs] == [aggregate]

        candidates = _cli(
            url, "allocation", "candidate", "list", "--resource", "VCPU=2",
            "--group", "1", "--resource", "NET_BW_EGR_KILOBIT_PER_SEC=1000",
            "--required", "CUSTOM_PHYSNET_PUBLIC", "-f", "json",
        )  # fmt: skip
        # One candidate, listed one row per provider it takes from.
        assert {row["#"] for row in candidates} == {1}
        assert {row["resource provider"] for row in candidates} == {root["uuid"], nic["uuid"]}

        consumer = str(uuid.uuid4())
        _cli(
            url, "resource", "provider", "allocation", "set", consumer,
            "--allocation", f"rp={root['uuid']},VCPU=2",
            "--allocation", f"rp={nic['uuid']},NET_BW_EGR_KILOBIT_PER_SEC=1000",
            "--project-id", "p1", "--user-id", "u1", "--consumer-type", "INSTANCE", "-f", "json",
        )  # fmt: skip
        usages = _cli(url, "resource", "provider", "usage", "show", root["uuid"], "-f", "json")
        assert {u["resource_class"]: u["usage"] for u in usages}["VCPU"] == 2
        project = _cli(url, "resource", "usage", "show", "p1", "-f", "json")
        # From 1.38 project usages are grouped by consumer type; the client shows each group.
        assert {u["resource_class"]: u["usage"] for u in project} == {
            "INSTANCE": {"VCPU": 2, "NET_BW_EGR_KILOBIT_PER_SEC": 1000, "consumer_count": 1}
        }
        listed = _cli(url, "resource", "provider", "list", "--in-tree", root["uuid"], "-f", "json")
        assert {p["name"] for p in listed} == {"cn1", "cn1:nic"}

"""The openstack CLI's quota, limits and usage commands against ``berth up`` with its Keystone:
compute and network quotas shown together, set per project and by default, and enforced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.integration.server import running_berth_up

OPENSTACK = Path(sys.executable).parent / "openstack"
FLEET = {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1, "vcpus": 8, "memory_mb": 16384,
                                        "disk_gb": 100}]}  # fmt: skip


def _run(clouds: Path, *args: str, cloud: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(
        {"OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": cloud, "OS_COMPUTE_API_VERSION": "2.64"}
    )
    return subprocess.run(
        [str(OPENSTACK), *args], env=env, capture_output=True, text=True, timeout=180
    )


def _cli(clouds: Path, *args: str, cloud: str = "berth") -> Any:
    done = _run(clouds, *args, cloud=cloud)
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout) if "json" in args else done.stdout


def _refused(clouds: Path, *args: str, cloud: str = "berth") -> str:
    done = _run(clouds, *args, cloud=cloud)
    assert done.returncode != 0, f"{' '.join(args)} succeeded:\n{done.stdout}"
    return done.stderr


def _limits(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {row["Resource"]: row["Limit"] for row in rows}


def test_quota_show_set_delete_limits_and_usage(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    with running_berth_up(str(tmp_path / "data"), str(fleet), auth="keystone"):
        clouds = tmp_path / "data" / "clouds.yaml"
        # Compute's and the network's quotas in one table (the CLI shows None for the
        # resources Berth does not have: subnet pools...).
        shown = _limits(_cli(clouds, "quota", "show", "-f", "json"))
        assert {name: shown[name] for name in ("instances", "cores", "ram", "networks", "subnets",
                "ports", "key-pairs", "server-groups", "security_groups", "security_group_rules",
                "routers", "floating_ips")} == {
            "instances": 10, "cores": 20, "ram": 51200, "networks": 100, "subnets": 100,
            "ports": 500, "key-pairs": 100, "server-groups": 10, "security_groups": 10,
            "security_group_rules": 100, "routers": 10, "floating_ips": 50,
        }  # fmt: skip
        _cli(clouds, "quota", "set", "--instances", "1", "--networks", "1", "--ports", "7", "demo")
        demo = _limits(_cli(clouds, "quota", "show", "demo", "-f", "json"))
        assert (demo["instances"], demo["networks"], demo["ports"]) == (1, 1, 7)
        # The demo project's member is held to them.
        _cli(clouds, "network", "create", "mine", cloud="berth-demo")
        assert "Quota exceeded for resources: ['network']" in _refused(
            clouds, "network", "create", "more", cloud="berth-demo"
        )
        server = _cli(clouds, "server", "create", "--flavor", "m1.small", "--image", "cirros",
                      "--nic", "none", "--wait", "vm1", "-f", "json", cloud="berth-demo")  # fmt: skip
        assert server["status"] == "ACTIVE"
        assert "Quota exceeded for instances: requested 1, but 1 of 1 instances" in _refused(
            clouds, "server", "create", "--flavor", "m1.small", "--image", "cirros",
            "--nic", "none", "vm2", cloud="berth-demo",
        )  # fmt: skip
        usage = {
            row["Resource"]: row["In Use"]
            for row in _cli(clouds, "quota", "show", "--usage", "demo", "-f", "json")
        }
        assert (usage["instances"], usage["networks"]) == (1, 1)
        absolute = {
            row["Name"]: row["Value"]
            for row in _cli(
                clouds, "limits", "show", "--absolute", "-f", "json", cloud="berth-demo"
            )
        }
        # The SDK names them: maxTotalInstances is "instances", totalInstancesUsed "instances_used".
        assert (absolute["instances"], absolute["instances_used"]) == (1, 1)
        # As upstream, a running server is counted to the end of the period (the CLI's is
        # tomorrow): a day of it.
        used = _cli(clouds, "usage", "show", "--project", "demo", "-f", "json")
        assert [server["name"] for server in used["Servers"]] == ["vm1"]
        assert 23.9 < float(used["CPU Hours"]) / server["flavor"]["vcpus"] < 24.1
        listed = _cli(clouds, "usage", "list", "-f", "json")
        assert [len(row["Servers"]) for row in listed] == [1]
        # The defaults, and a project given them back.
        _cli(clouds, "quota", "set", "--default", "--instances", "15")
        assert _limits(_cli(clouds, "quota", "show", "--default", "-f", "json"))["instances"] == 15
        _cli(clouds, "quota", "delete", "demo")
        demo = _limits(_cli(clouds, "quota", "show", "demo", "-f", "json"))
        assert (demo["instances"], demo["networks"], demo["ports"]) == (15, 100, 500)

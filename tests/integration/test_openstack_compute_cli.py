"""The README's tour: the real openstack CLI boots a server with a QoS port against ``berth up``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.integration.server import TWO_OVS_HOSTS, running_berth_up

OPENSTACK = Path(sys.executable).parent / "openstack"


def _cli(clouds: Path, *args: str, cloud: str = "berth") -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(
        {
            "OS_CLIENT_CONFIG_FILE": str(clouds),
            "OS_CLOUD": cloud,
            "OS_COMPUTE_API_VERSION": "2.64",
        }
    )
    done = subprocess.run(
        [str(OPENSTACK), *args], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout) if "json" in args else done.stdout


def test_the_tour_boots_a_server_whose_port_holds_its_bandwidth(tmp_path: Path) -> None:
    """The README's tour, as written: the admin (cloud ``berth``) sets up the network, the demo
    project's member (``berth-demo``) boots; every client logs in to the Keystone at /identity."""
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(TWO_OVS_HOSTS))
    with running_berth_up(str(tmp_path / "data"), str(fleet), auth="keystone"):
        clouds = tmp_path / "data" / "clouds.yaml"
        assert _cli(clouds, "server", "list", "-f", "json") == []
        _cli(clouds, "network", "create", "--share", "--provider-network-type", "flat",
             "--provider-physical-network", "public", "public")  # fmt: skip
        _cli(clouds, "subnet", "create", "--network", "public", "--subnet-range", "192.0.2.0/24",
             "public-v4")  # fmt: skip
        _cli(clouds, "network", "qos", "policy", "create", "--share", "bw")
        _cli(clouds, "network", "qos", "rule", "create", "--type", "minimum-bandwidth",
             "--min-kbps", "100000", "--egress", "bw")  # fmt: skip
        demo = {"cloud": "berth-demo"}
        _cli(clouds, "port", "create", "--network", "public", "--qos-policy", "bw", "port1", **demo)
        server = _cli(clouds, "server", "create", "--flavor", "m1.small", "--image", "cirros",
                      "--port", "port1", "--wait", "vm1", "-f", "json", **demo)  # fmt: skip
        assert server["status"] == "ACTIVE"
        # Where it runs and how its port is bound are for the admin's eyes.
        assert server.get("OS-EXT-SRV-ATTR:host") is None
        listed = _cli(clouds, "server", "list", "-f", "json", **demo)
        assert [(s["Name"], s["Status"]) for s in listed] == [("vm1", "ACTIVE")]
        host = _cli(clouds, "server", "show", server["id"], "-f", "json")["OS-EXT-SRV-ATTR:host"]
        port = _cli(clouds, "port", "show", "port1", "-f", "json")
        assert port["status"] == "ACTIVE" and port["binding_host_id"] == host
        (provider,) = port["binding_profile"]["allocation"].values()
        bridge = _cli(clouds, "resource", "provider", "show", provider, "-f", "json")
        assert bridge["name"] == f"{host}:Open vSwitch agent:br-ex"
        _cli(clouds, "server", "delete", "--wait", "vm1", **demo)
        assert _cli(clouds, "server", "list", "--all-projects", "-f", "json") == []


def test_the_audit_command_against_berth_up(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(TWO_OVS_HOSTS))
    data = tmp_path / "data"
    with running_berth_up(str(data), str(fleet), auth="noauth2") as url:
        env = {**os.environ, "BERTH_DATA_DIR": str(data)}
        arguments = ["--placement-url", f"{url}/placement", "--network-url", f"{url}/networking"]
        clean = subprocess.run([sys.executable, "-m", "berth.cli", "manage", "audit", *arguments],
                               capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
        assert (clean.returncode, clean.stdout.strip(), clean.stderr[-2000:]) == (
            0,
            "nothing leaked, nothing over capacity",
            "",
        )
        # An allocation nobody owns is a leak the audit names.
        headers = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
        node = httpx.get(f"{url}/placement/resource_providers?name=cn1", headers=headers).json()
        consumer = "9c3b8d3e-2f0a-4c1e-9e55-7a8b6c5d4e3f"
        claim = {"allocations": {node["resource_providers"][0]["uuid"]: {"resources": {"VCPU": 1}}},
                 "project_id": "p", "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}  # fmt: skip
        assert (
            httpx.put(
                f"{url}/placement/allocations/{consumer}", json=claim, headers=headers
            ).status_code
            == 204
        )
        leaked = subprocess.run([sys.executable, "-m", "berth.cli", "manage", "audit", *arguments],
                                capture_output=True, text=True, timeout=60, env=env)  # fmt: skip
        assert leaked.returncode == 1
        assert leaked.stdout.strip() == f"leaked allocation: {consumer} on cn1: no live server"

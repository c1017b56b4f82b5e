"""The real openstack CLI drives one tour of every move and interface command against ``berth up``
with its Keystone: cold migrate and confirm, resize and revert, live migration (to the
scheduler's choice and to a named host), shelve and unshelve, a port and a network attached and a
port detached, evacuation from a host forced down, and the server's event list that records them.

After each step the tour asks the CLI where the server is and asks Placement (over HTTP, with the
admin's token from ``openstack token issue``) who holds what: the server on its host and on that
host's bridge with its ports' QoS bandwidth, a move's migration consumer on the source while the
move waits for confirmation, and nothing once it is done. (Each CLI run takes seconds, so waits
poll the Compute API the same way and ask the CLI once the server has settled.)

One cloud serves the module (its Keystone takes a while to set up). The CLI's ``server evacuate
--wait`` is not used: python-openstackclient 10.5 waits for ``ACTIVE`` among lower-cased statuses
and so never returns; the tour polls ``server show`` instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.integration.server import running_berth_up

OPENSTACK = Path(sys.executable).parent / "openstack"

# Three OVS hosts (cn1..cn3) with a 1 Gbit/s bridge on "public", so that every move has two
# places to go.
THREE_OVS_HOSTS = {
    "cells": ["cell1"],
    "hosts": [{"name": "cn", "count": 3, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
               "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1000000,
                                             "ingress_kbps": 1000000}}}}],
}  # fmt: skip
HOSTS = {"cn1", "cn2", "cn3"}
SMALL = {"DISK_GB": 1, "MEMORY_MB": 512, "VCPU": 1}
BIG = {"DISK_GB": 2, "MEMORY_MB": 1024, "VCPU": 2}
KBPS = 1000  # each QoS port's minimum egress bandwidth
EGRESS = "NET_BW_EGR_KILOBIT_PER_SEC"
SETTLE_SECONDS = 120


@dataclass
class Cloud:
    clouds: Path
    http: httpx.Client = field(init=False)  # the admin's token, at berth up's address
    providers: dict[str, str] = field(default_factory=dict)  # uuid -> name

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(
            {
                "OS_CLIENT_CONFIG_FILE": str(self.clouds),
                "OS_CLOUD": "berth",
                # 2.64 for every command: live migration to a host (2.30), forced down (2.11),
                # migrations with their uuid and type (2.59), events with their host (2.62).
                "OS_COMPUTE_API_VERSION": "2.64",
            }
        )
        return subprocess.run(
            [str(OPENSTACK), *args], env=env, capture_output=True, text=True, timeout=300
        )

    def cli(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.cli(*args, "-f", "json"))

    def server(self, server: str) -> dict[str, Any]:
        return self.json("server", "show", server)  # type: ignore[no-any-return]

    def settled(self, server: str, status: str) -> dict[str, Any]:
        """``server show`` once the server is ``status`` with no task under way."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            answer = self.http.get(f"/compute/v2.1/servers/{server}")
            shown = answer.raise_for_status().json()["server"]
            if shown["status"] == status and shown["OS-EXT-STS:task_state"] is None:
                break
            assert shown["status"] != "ERROR", shown.get("fault")
            assert time.monotonic() < deadline, f"{server} is {shown['status']}, not {status}"
            time.sleep(0.2)
        shown = self.server(server)
        assert (shown["status"], shown["OS-EXT-STS:task_state"]) == (status, None)
        return shown

    def allocations(self, consumer: str) -> dict[str, dict[str, int]]:
        """What ``consumer`` holds in Placement, by provider name."""
        answer = self.http.get(f"/placement/allocations/{consumer}").raise_for_status()
        held = answer.json()["allocations"]
        return {self.providers[uuid]: a["resources"] for uuid, a in held.items()}

    def last_migration(self, server: str) -> dict[str, Any]:
        migrations = self.json("server", "migration", "list", "--server", server)
        return max(migrations, key=lambda m: m["Id"])  # type: ignore[no-any-return]


def _on(host: str, flavor: dict[str, int], ports: int = 1) -> dict[str, dict[str, int]]:
    """A server's allocation on ``host``: its flavor there and its ports' bandwidth on the bridge."""
    return {host: flavor, f"{host}:Open vSwitch agent:br-ex": {EGRESS: KBPS * ports}}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    """The cloud with a shared flat network on "public", a QoS policy of a minimum egress
    bandwidth, two ports with it and two flavors."""
    root = tmp_path_factory.mktemp("moves-cloud")
    fleet = root / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(THREE_OVS_HOSTS))
    with running_berth_up(str(root / "data"), str(fleet), auth="keystone") as url:
        cloud = Cloud(root / "data" / "clouds.yaml")
        token = cloud.json("token", "issue")["id"]
        headers = {"x-auth-token": token, "openstack-api-version": "compute 2.64"}
        cloud.http = httpx.Client(base_url=url, headers=headers, timeout=30)
        cloud.cli("network", "create", "--provider-network-type", "flat",
                  "--provider-physical-network", "public", "--share", "public")  # fmt: skip
        cloud.cli("subnet", "create", "--network", "public", "--subnet-range", "192.0.2.0/24",
                  "public-v4")  # fmt: skip
        cloud.cli("network", "qos", "policy", "create", "bw")
        rule = cloud.json("network", "qos", "rule", "create", "--type", "minimum-bandwidth",
                          "--min-kbps", str(KBPS), "--egress", "bw")  # fmt: skip
        assert (rule["min_kbps"], rule["direction"]) == (KBPS, "egress")
        for port in ("port1", "port2"):
            cloud.cli("port", "create", "--network", "public", "--qos-policy", "bw", port)
        cloud.cli("flavor", "create", "--vcpus", "1", "--ram", "512", "--disk", "1", "small")
        cloud.cli("flavor", "create", "--vcpus", "2", "--ram", "1024", "--disk", "2", "big")
        cloud.providers.update(
            (p["uuid"], p["name"]) for p in cloud.json("resource", "provider", "list")
        )
        with cloud.http:
            yield cloud


def test_one_tour_of_every_move_and_interface_command(cloud: Cloud) -> None:
    booted = cloud.json("server", "create", "--flavor", "small", "--image", "cirros",
                        "--port", "port1", "--wait", "vm1")  # fmt: skip
    server = booted["id"]
    assert booted["status"] == "ACTIVE"
    host = booted["OS-EXT-SRV-ATTR:host"]
    assert cloud.allocations(server) == _on(host, SMALL)

    host = _cold_migrate_and_confirm(cloud, server, host)
    _resize_and_revert(cloud, server, host)
    host = _live_migrate(cloud, server, host)
    host = _shelve_and_unshelve(cloud, server, host)
    _attach_and_detach(cloud, server, host)
    host = _evacuate(cloud, server, host)
    _events(cloud, server)

    cloud.cli("server", "delete", "--wait", server)
    assert cloud.allocations(server) == {}
    assert _bound(cloud, "port1") == ""


def _cold_migrate_and_confirm(cloud: Cloud, server: str, source: str) -> str:
    cloud.cli("server", "migrate", "--wait", server)
    moved = cloud.settled(server, "VERIFY_RESIZE")
    target = moved["OS-EXT-SRV-ATTR:host"]
    assert target in HOSTS - {source}
    migration = cloud.last_migration(server)
    assert (migration["Type"], migration["Status"]) == ("migration", "finished")
    assert (migration["Source Compute"], migration["Dest Compute"]) == (source, target)
    # The server holds the destination; the migration holds the source until confirmed.
    assert cloud.allocations(server) == _on(target, SMALL)
    assert cloud.allocations(migration["UUID"]) == _on(source, SMALL)
    assert _bound(cloud, "port1") == target

    cloud.cli("server", "resize", "confirm", server)
    assert cloud.settled(server, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == target
    assert cloud.last_migration(server)["Status"] == "confirmed"
    assert cloud.allocations(server) == _on(target, SMALL)
    assert cloud.allocations(migration["UUID"]) == {}
    return str(target)


def _resize_and_revert(cloud: Cloud, server: str, source: str) -> None:
    cloud.cli("server", "resize", "--flavor", "big", "--wait", server)
    resized = cloud.settled(server, "VERIFY_RESIZE")
    target = resized["OS-EXT-SRV-ATTR:host"]
    assert target in HOSTS - {source}
    assert resized["flavor"]["name"] == "big"
    migration = cloud.last_migration(server)
    assert (migration["Type"], migration["Source Compute"]) == ("resize", source)
    assert cloud.allocations(server) == _on(target, BIG)
    assert cloud.allocations(migration["UUID"]) == _on(source, SMALL)

    cloud.cli("server", "resize", "revert", server)
    reverted = cloud.settled(server, "ACTIVE")
    assert reverted["OS-EXT-SRV-ATTR:host"] == source
    assert reverted["flavor"]["name"] == "small"
    assert cloud.last_migration(server)["Status"] == "reverted"
    assert cloud.allocations(server) == _on(source, SMALL)
    assert cloud.allocations(migration["UUID"]) == {}
    assert _bound(cloud, "port1") == source


def _live_migrate(cloud: Cloud, server: str, source: str) -> str:
    """Once where the scheduler chooses, once to a named host; each hands back the migration's
    hold on the source when it completes."""
    cloud.cli("server", "migrate", "--live-migration", "--wait", server)
    chosen = cloud.settled(server, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    assert chosen in HOSTS - {source}
    migration = cloud.last_migration(server)
    assert (migration["Type"], migration["Status"]) == ("live-migration", "completed")
    assert (migration["Source Compute"], migration["Dest Compute"]) == (source, chosen)
    assert cloud.allocations(server) == _on(chosen, SMALL)
    assert cloud.allocations(migration["UUID"]) == {}

    (named,) = HOSTS - {source, chosen}
    cloud.cli("server", "migrate", "--live-migration", "--host", named, "--wait", server)
    assert cloud.settled(server, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == named
    migration = cloud.last_migration(server)
    assert (migration["Type"], migration["Dest Compute"]) == ("live-migration", named)
    assert cloud.allocations(server) == _on(named, SMALL)
    assert cloud.allocations(migration["UUID"]) == {}
    assert _bound(cloud, "port1") == named
    return str(named)


def _shelve_and_unshelve(cloud: Cloud, server: str, host: str) -> str:
    cloud.cli("server", "shelve", "--wait", server)
    shelved = cloud.settled(server, "SHELVED_OFFLOADED")
    assert shelved["OS-EXT-SRV-ATTR:host"] is None
    assert cloud.allocations(server) == {}
    port = _port(cloud, "port1")
    assert (port["binding:host_id"], port["binding:profile"]) == ("", {})

    cloud.cli("server", "unshelve", "--wait", server)
    unshelved = cloud.settled(server, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    assert unshelved in HOSTS
    assert cloud.allocations(server) == _on(unshelved, SMALL)
    assert _bound(cloud, "port1") == unshelved
    return str(unshelved)


def _attach_and_detach(cloud: Cloud, server: str, host: str) -> None:
    """A second QoS port adds its bandwidth to the server's hold on the bridge and gives it back
    when detached; a network attached gets a port of its own (without QoS)."""
    cloud.cli("server", "add", "port", server, "port2")
    port2 = cloud.json("port", "show", "port2")
    assert (port2["device_id"], port2["binding_host_id"]) == (server, host)
    (bridge,) = port2["binding_profile"]["allocation"].values()
    assert cloud.providers[bridge] == f"{host}:Open vSwitch agent:br-ex"
    assert cloud.allocations(server) == _on(host, SMALL, ports=2)
    listed = cloud.json("port", "list", "--server", server)
    assert sorted(p["Name"] for p in listed) == ["port1", "port2"]

    cloud.cli("server", "remove", "port", server, "port2")
    _until(lambda: _port(cloud, "port2")["device_id"] == "", "port2 detached")
    port2 = cloud.json("port", "show", "port2")
    assert (port2["binding_host_id"], port2["binding_profile"]) == ("", {})
    assert cloud.allocations(server) == _on(host, SMALL)

    cloud.cli("server", "add", "network", server, "public")
    listed = cloud.json("port", "list", "--server", server)
    assert len(listed) == 2 and "port1" in {p["Name"] for p in listed}
    assert len(cloud.server(server)["addresses"]["public"]) == 2
    assert cloud.allocations(server) == _on(host, SMALL)


def _evacuate(cloud: Cloud, server: str, failed: str) -> str:
    """Its host forced down, the server is rebuilt elsewhere with its ports and their bandwidth."""
    cloud.cli("compute", "service", "set", "--down", failed, "nova-compute")
    states = {s["Host"]: s["State"] for s in cloud.json("compute", "service", "list")}
    assert states[failed] == "down"
    cloud.cli("server", "evacuate", server)  # not --wait: see the module's docstring
    _until(lambda: _host(cloud, server) != failed, "evacuated")
    rebuilt = cloud.settled(server, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    assert rebuilt in HOSTS - {failed}
    migration = cloud.last_migration(server)
    assert (migration["Type"], migration["Status"]) == ("evacuation", "done")
    assert (migration["Source Compute"], migration["Dest Compute"]) == (failed, rebuilt)
    assert cloud.allocations(server) == _on(rebuilt, SMALL)
    assert _bound(cloud, "port1") == rebuilt
    assert len(cloud.json("port", "list", "--server", server)) == 2
    cloud.cli("compute", "service", "set", "--up", failed, "nova-compute")
    return str(rebuilt)


def _events(cloud: Cloud, server: str) -> None:
    """Every step of the tour is an action of the server, each with its events."""
    listed = cloud.json("server", "event", "list", server)
    # Sorted: steps a second apart may start within the same second.
    assert sorted(e["Action"] for e in listed) == sorted([
        "create", "migrate", "confirmResize", "resize", "revertResize", "live-migration",
        "live-migration", "shelve", "unshelve", "attach_interface", "detach_interface",
        "attach_interface", "evacuate",
    ])  # fmt: skip
    migrate = next(e for e in listed if e["Action"] == "migrate")
    shown = cloud.json("server", "event", "show", server, migrate["Request ID"])
    assert (shown["action"], shown["request_id"]) == ("migrate", migrate["Request ID"])
    assert shown["events"] and all(e["result"] == "Success" for e in shown["events"])
    assert {e["host"] for e in shown["events"]} & HOSTS


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SETTLE_SECONDS
    while not condition():
        assert time.monotonic() < deadline, f"not {what} within {SETTLE_SECONDS} s"
        time.sleep(0.2)


def _port(cloud: Cloud, name: str) -> dict[str, Any]:
    """The port over HTTP: the CLI's ``port show`` costs seconds and is asked in step 5."""
    answer = cloud.http.get("/networking/v2.0/ports", params={"name": name}).raise_for_status()
    (found,) = answer.json()["ports"]
    return found  # type: ignore[no-any-return]


def _bound(cloud: Cloud, name: str) -> str:
    """The host the port is bound to ("" when unbound)."""
    return str(_port(cloud, name)["binding:host_id"])


def _host(cloud: Cloud, server: str) -> str | None:
    answer = cloud.http.get(f"/compute/v2.1/servers/{server}").raise_for_status()
    host = answer.json()["server"]["OS-EXT-SRV-ATTR:host"]
    return None if host is None else str(host)

"""The real openstack CLI evacuates a server off a host an operator forced down (``berth up``)."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import yaml

from tests.integration.server import TWO_OVS_HOSTS, running_berth_up
from tests.integration.test_openstack_compute_cli import _cli


def test_openstack_server_evacuate_rebuilds_the_server_on_the_named_host(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(TWO_OVS_HOSTS))
    with running_berth_up(str(tmp_path / "data"), str(fleet), auth="noauth2") as url:
        clouds = tmp_path / "data" / "clouds.yaml"
        _cli(clouds, "network", "create", "--share", "--provider-network-type", "flat",
             "--provider-physical-network", "public", "public")  # fmt: skip
        _cli(clouds, "subnet", "create", "--network", "public", "--subnet-range", "192.0.2.0/24",
             "public-v4")  # fmt: skip
        server = _cli(clouds, "server", "create", "--flavor", "m1.small", "--image", "cirros",
                      "--network", "public", "--wait", "vm1", "-f", "json")  # fmt: skip
        source = server["OS-EXT-SRV-ATTR:host"]
        computes = _cli(clouds, "compute", "service", "list", "--service", "nova-compute",
                        "-f", "json")  # fmt: skip
        (other,) = {s["Host"] for s in computes} - {source}
        _cli(clouds, "compute", "service", "set", "--down", source, "nova-compute")

        # Not --wait: this client's evacuate waits for "ACTIVE" against a lowered status.
        _cli(clouds, "server", "evacuate", "--host", other, "vm1", "-f", "json")
        deadline = time.monotonic() + 60
        while (shown := _cli(clouds, "server", "show", "vm1", "-f", "json"))["status"] != "ACTIVE":
            assert time.monotonic() < deadline, shown["status"]
            time.sleep(0.5)
        assert shown["OS-EXT-SRV-ATTR:host"] == other
        # (The CLI's migration list looks users up in an identity service noauth2 has not.)
        answer = httpx.get(
            f"{url}/compute/v2.1/os-migrations",
            headers={"x-auth-token": "admin", "openstack-api-version": "compute 2.59"},
        )
        (migration,) = answer.json()["migrations"]
        assert (migration["migration_type"], migration["status"]) == ("evacuation", "done")
        assert (migration["source_compute"], migration["dest_compute"]) == (source, other)
        _cli(clouds, "server", "delete", "--wait", "vm1")

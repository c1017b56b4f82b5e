"""A fresh ``berth up`` for tempest: start it, seed what tempest needs, read what it offers.

``BerthUp`` runs ``berth up`` of this checkout on a new data directory and a free port, waits
until every API answers, and stops it (SIGTERM, then SIGKILL) however the run ends. ``prepare``
then logs in as the admin of clouds.yaml and makes tempest's fixtures through Berth's own APIs:
two flavors, a second image and a shared network with a subnet for the servers tempest boots.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

# Names of what prepare() makes, so that a reader of the cloud can tell them from tempest's own.
SHARED_NETWORK = "tempest-shared"
SHARED_CIDR = "10.254.0.0/24"
# The external network of routers' gateways and floating IPs.
PUBLIC_NETWORK = "tempest-public"
PUBLIC_CIDR = "172.24.4.0/24"
ROUTER = "tempest-router"
ALT_IMAGE = "tempest-alt"
# Its data: what a raw disk holds does not matter to simulated hosts.
ALT_IMAGE_DATA = b"tempest-alt raw disk\n" + bytes(4096)
# Small enough for cirros (min_ram 64, min_disk 1); the second is larger, for resize tests.
FLAVORS = (("tempest.tiny", 128, 1, 1), ("tempest.small", 256, 1, 2))
START_TIMEOUT = 300.0
# Tempest makes a project and users for every test class and logs each in: at bcrypt's default
# cost (12) hashing and checking their passwords was 90% of a run's time on two busy cores. The
# embedded Keystone reads this through oslo.config's environment source; 4 is bcrypt's least.
KEYSTONE_ENV = {"OS_IDENTITY__PASSWORD_HASH_ROUNDS": "4"}


@dataclass(frozen=True)
class Account:
    username: str
    password: str
    project_name: str


@dataclass(frozen=True)
class CloudFacts:
    """What tempest.conf is written from."""

    base_url: str
    admin: Account
    compute_min_version: str
    compute_max_version: str
    network_extensions: list[str]
    image_api: bool
    image_ref: str
    image_ref_alt: str
    flavor_ref: str
    flavor_ref_alt: str
    shared_network: str
    compute_hosts: int
    public_network_id: str

    @property
    def identity_v3(self) -> str:
        return f"{self.base_url}/identity/v3"


class BerthUp:
    """``berth up --hosts N`` in ``data_dir``, its output in ``log_path``; a context manager."""

    def __init__(self, data_dir: Path, log_path: Path, hosts: int) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.hosts = hosts
        self.port = _free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> BerthUp:
        # The berth of the venv this module runs in: the checkout's own, installed editable.
        berth = Path(sys.executable).with_name("berth")
        command = [
            str(berth), "up", "--data-dir", str(self.data_dir), "--port", str(self.port),
            "--hosts", str(self.hosts),
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **KEYSTONE_ENV}
            )
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    @property
    def clouds_yaml(self) -> Path:
        return self.data_dir / "clouds.yaml"

    def admin(self) -> Account:
        """The admin of clouds.yaml (cloud ``berth``)."""
        auth = yaml.safe_load(self.clouds_yaml.read_text())["clouds"]["berth"]["auth"]
        return Account(auth["username"], auth["password"], auth["project_name"])

    def _wait_until_up(self) -> None:
        """Until clouds.yaml is written and the compute API answers (not 503 "starting")."""
        deadline = time.monotonic() + START_TIMEOUT
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"berth up exited with {self._process.returncode}; see {self.log_path}"
                )
            if self.clouds_yaml.exists():
                with contextlib.suppress(httpx.TransportError):
                    if httpx.get(f"{self.base_url}/compute/", timeout=5).status_code == 200:
                        return
            time.sleep(0.5)
        raise RuntimeError(f"berth up did not start in {START_TIMEOUT:.0f} s; see {self.log_path}")


def prepare(up: BerthUp) -> CloudFacts:
    """Seed the cloud for tempest and read the facts tempest.conf needs."""
    admin = up.admin()
    with httpx.Client(base_url=up.base_url, timeout=60) as client:
        client.headers["X-Auth-Token"] = _token(client, admin)
        (compute,) = [
            version
            for version in _get(client, "/compute/").json()["versions"]
            if version["status"] == "CURRENT"
        ]
        extensions = _get(client, "/networking/v2.0/extensions").json()["extensions"]
        image_api = client.get("/image/").status_code in (200, 300)
        image_ref = _public_image(client)
        image_ref_alt = _create_image(client)
        flavor_ref, flavor_ref_alt = (_create_flavor(client, *flavor) for flavor in FLAVORS)
        shared_subnet = _create_shared_network(client)
        public_network_id = _create_public_network(client, shared_subnet)
        hypervisors = _get(client, "/compute/v2.1/os-hypervisors").json()["hypervisors"]
    return CloudFacts(
        base_url=up.base_url,
        admin=admin,
        compute_min_version=compute["min_version"],
        compute_max_version=compute["version"],
        network_extensions=sorted(e["alias"] for e in extensions),
        image_api=image_api,
        image_ref=image_ref,
        image_ref_alt=image_ref_alt,
        flavor_ref=flavor_ref,
        flavor_ref_alt=flavor_ref_alt,
        shared_network=SHARED_NETWORK,
        compute_hosts=len(hypervisors),
        public_network_id=public_network_id,
    )


def _token(client: httpx.Client, account: Account) -> str:
    body = {
        "auth": {
            "identity": {
                "methods": ["password"],
                "password": {
                    "user": {
                        "name": account.username,
                        "password": account.password,
                        "domain": {"name": "Default"},
                    }
                },
            },
            "scope": {"project": {"name": account.project_name, "domain": {"name": "Default"}}},
        }
    }
    response = client.post("/identity/v3/auth/tokens", json=body)
    response.raise_for_status()
    return response.headers["X-Subject-Token"]


def _get(client: httpx.Client, path: str) -> httpx.Response:
    response = client.get(path)
    response.raise_for_status()
    return response


def _post(client: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(path, json=body)
    if response.status_code >= 400:
        raise RuntimeError(f"POST {path}: {response.status_code} {response.text}")
    result: dict[str, Any] = response.json()
    return result


def _public_image(client: httpx.Client) -> str:
    """The image Berth starts with (cirros): the first active public one."""
    images = _get(client, "/image/v2/images?visibility=public&status=active").json()["images"]
    if not images:
        raise RuntimeError("Berth has no public active image to boot tempest's servers from")
    return str(images[0]["id"])


def _create_image(client: httpx.Client) -> str:
    """A public raw image with a little data (an image is queued, unbootable, until it has)."""
    body = {
        "name": ALT_IMAGE, "visibility": "public", "disk_format": "raw",
        "container_format": "bare", "min_ram": 64, "min_disk": 1,
    }  # fmt: skip
    image_id = str(_post(client, "/image/v2/images", body)["id"])
    upload = client.put(
        f"/image/v2/images/{image_id}/file",
        content=ALT_IMAGE_DATA,
        headers={"content-type": "application/octet-stream"},
    )
    if upload.status_code >= 400:
        raise RuntimeError(f"uploading {ALT_IMAGE}: {upload.status_code} {upload.text}")
    return image_id


def _create_flavor(client: httpx.Client, name: str, ram: int, vcpus: int, disk: int) -> str:
    body = {"flavor": {"name": name, "ram": ram, "vcpus": vcpus, "disk": disk}}
    return str(_post(client, "/compute/v2.1/flavors", body)["flavor"]["id"])


def _create_shared_network(client: httpx.Client) -> str:
    """The shared network; returns its subnet's id."""
    network = _post(
        client, "/networking/v2.0/networks", {"network": {"name": SHARED_NETWORK, "shared": True}}
    )
    subnet = {
        "network_id": network["network"]["id"], "name": f"{SHARED_NETWORK}-subnet",
        "ip_version": 4, "cidr": SHARED_CIDR,
    }  # fmt: skip
    return str(_post(client, "/networking/v2.0/subnets", {"subnet": subnet})["subnet"]["id"])


def _create_public_network(client: httpx.Client, shared_subnet: str) -> str:
    """The external network, and a router joining the shared network's subnet to it (so the
    servers tempest boots there can have floating IPs)."""
    body = {"network": {"name": PUBLIC_NETWORK, "router:external": True}}
    network_id = str(_post(client, "/networking/v2.0/networks", body)["network"]["id"])
    subnet = {
        "network_id": network_id, "name": f"{PUBLIC_NETWORK}-subnet", "ip_version": 4,
        "cidr": PUBLIC_CIDR,
    }  # fmt: skip
    _post(client, "/networking/v2.0/subnets", {"subnet": subnet})
    gateway = {"router": {"name": ROUTER, "external_gateway_info": {"network_id": network_id}}}
    router_id = _post(client, "/networking/v2.0/routers", gateway)["router"]["id"]
    plugged = client.put(
        f"/networking/v2.0/routers/{router_id}/add_router_interface",
        json={"subnet_id": shared_subnet},
    )
    if plugged.status_code >= 400:
        raise RuntimeError(f"add_router_interface: {plugged.status_code} {plugged.text}")
    return network_id


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])

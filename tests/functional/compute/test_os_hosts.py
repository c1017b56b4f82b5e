"""/os-hosts, the legacy hosts API (before 2.43): the enabled services as hosts with their
zones, a compute host's resources and who uses them, switching a host's compute service, and the
501s of what simulated hosts cannot do."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.compute.db import instances
from tests.functional.compute.conftest import Hosts, version

V2_42 = version(42)


@pytest.fixture
def two(hosts: Hosts, cell_db: Database) -> None:
    """h1 with two servers of project p1 and one of p2; h2 empty; a conductor."""
    hosts.add("h1")
    hosts.add("h2")
    hosts.add("ctl", binary="nova-conductor", topic="conductor", node=False)
    flavor = {"id": "1", "vcpus": 2, "memory_mb": 1024, "root_gb": 10, "ephemeral_gb": 5}
    with cell_db.write() as conn:
        for project in ("p1", "p1", "p2"):
            instances.create(
                conn,
                {
                    "uuid": str(uuid.uuid4()),
                    "project_id": project,
                    "user_id": "u",
                    "display_name": "vm",
                    "host": "h1",
                    "node": "h1",
                    "vm_state": "active",
                    "flavor": flavor,
                    "metadata": {},
                    "network_info": [],
                },
            )


def _hosts(client: httpx.Client, **params: str) -> list[dict[str, Any]]:
    answer = client.get("/v2.1/os-hosts", params=params, headers=V2_42)
    assert answer.status_code == 200, answer.text
    return list(answer.json()["hosts"])


@pytest.mark.usefixtures("two")
def test_list_with_zones(compute: httpx.Client) -> None:
    made = compute.post(
        "/v2.1/os-aggregates", json={"aggregate": {"name": "r", "availability_zone": "az1"}}
    ).json()["aggregate"]
    compute.post(f"/v2.1/os-aggregates/{made['id']}/action", json={"add_host": {"host": "h2"}})
    listed = _hosts(compute)
    assert sorted((h["host_name"], h["service"], h["zone"]) for h in listed) == [
        ("ctl", "conductor", "internal"),
        ("h1", "compute", "nova"),
        ("h2", "compute", "az1"),
    ]
    assert [h["host_name"] for h in _hosts(compute, zone="az1")] == ["h2"]
    assert len(_hosts(compute, zone="")) == 3  # a blank zone is no filter
    assert _hosts(compute, zone="xxx") == []
    # A disabled host is not listed (as upstream's).
    disabled = compute.put("/v2.1/os-hosts/h2", json={"status": "disable"}, headers=V2_42)
    assert disabled.json() == {"host": "h2", "status": "disabled"}
    assert "h2" not in [h["host_name"] for h in _hosts(compute)]


@pytest.mark.usefixtures("two")
def test_show_a_hosts_resources(compute: httpx.Client) -> None:
    answer = compute.get("/v2.1/os-hosts/h1", headers=V2_42)
    assert answer.status_code == 200, answer.text
    lines = [entry["resource"] for entry in answer.json()["host"]]
    assert {line["host"] for line in lines} == {"h1"}
    by_project = {
        line["project"]: (line["cpu"], line["memory_mb"], line["disk_gb"]) for line in lines
    }
    assert by_project == {
        "(total)": (8, 16384, 100),
        "(used_now)": (0, 0, 0),  # what the node reported, nothing yet
        "(used_max)": (6, 3072, 45),
        "p1": (4, 2048, 30),
        "p2": (2, 1024, 15),
    }
    empty = compute.get("/v2.1/os-hosts/h2", headers=V2_42).json()["host"]
    assert [line["resource"]["project"] for line in empty] == [
        "(total)",
        "(used_now)",
        "(used_max)",
    ]
    for host in ("nowhere", "ctl"):
        missing = compute.get(f"/v2.1/os-hosts/{host}", headers=V2_42)
        assert missing.status_code == 404
        assert (
            missing.json()["itemNotFound"]["message"] == f"Compute host {host} could not be found."
        )


@pytest.mark.usefixtures("two")
def test_switching_a_host_is_switching_its_compute_service(compute: httpx.Client) -> None:
    put = compute.put
    assert put("/v2.1/os-hosts/h1", json={"status": "Disable"}, headers=V2_42).json() == {
        "host": "h1",
        "status": "disabled",
    }
    services = compute.get("/v2.1/os-services", params={"host": "h1"}).json()["services"]
    assert [s["status"] for s in services] == ["disabled"]
    assert put("/v2.1/os-hosts/h1", json={"status": "enable"}, headers=V2_42).json() == {
        "host": "h1",
        "status": "enabled",
    }
    maintenance = put("/v2.1/os-hosts/h1", json={"maintenance_mode": "enable"}, headers=V2_42)
    assert maintenance.status_code == 501 and maintenance.json()["notImplemented"]["code"] == 501


@pytest.mark.usefixtures("two")
@pytest.mark.parametrize(
    ("host", "body", "status"),
    [
        ("h1", {"status": "invalid", "maintenance_mode": "enable"}, 400),
        ("h1", {"status": "enable", "maintenance_mode": "invalid"}, 400),
        ("h1", {}, 400),
        ("h1", {"status": None, "maintenance_mode": None}, 400),
        ("h1", {"status": "enable", "other": 1}, 400),
        ("h1", [], 400),
        ("nowhere", {"status": "enable", "maintenance_mode": "enable"}, 404),
    ],
)
def test_update_refusals(compute: httpx.Client, host: str, body: Any, status: int) -> None:
    answer = compute.put(f"/v2.1/os-hosts/{host}", json=body, headers=V2_42)
    assert answer.status_code == status, answer.text


@pytest.mark.usefixtures("two")
@pytest.mark.parametrize("action", ["startup", "shutdown", "reboot"])
def test_power_actions(compute: httpx.Client, alice: httpx.Client, action: str) -> None:
    assert compute.get(f"/v2.1/os-hosts/h1/{action}", headers=V2_42).status_code == 501
    assert compute.get(f"/v2.1/os-hosts/nowhere/{action}", headers=V2_42).status_code == 404
    assert alice.get(f"/v2.1/os-hosts/h1/{action}", headers=V2_42).status_code == 403


@pytest.mark.usefixtures("two")
def test_admins_only_and_gone_at_2_43(compute: httpx.Client, alice: httpx.Client) -> None:
    assert alice.get("/v2.1/os-hosts", headers=V2_42).status_code == 403
    assert alice.get("/v2.1/os-hosts/h1", headers=V2_42).status_code == 403
    refused = alice.put("/v2.1/os-hosts/h1", json={"status": "enable"}, headers=V2_42)
    assert refused.status_code == 403
    for path in ("/v2.1/os-hosts", "/v2.1/os-hosts/h1", "/v2.1/os-hosts/h1/reboot"):
        assert compute.get(path, headers=version(43)).status_code == 404
    assert compute.get("/v2.1/os-hosts").status_code == 200  # 2.1

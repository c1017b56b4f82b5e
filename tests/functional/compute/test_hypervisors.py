"""/os-hypervisors: the compute nodes of the cells with their usage and service; ids, paging,
the name pattern and servers by microversion."""

from __future__ import annotations

import re

import httpx
import pytest

from berth.compute.db import instances
from tests.functional.compute.conftest import Hosts, version

LATEST = version(64)


@pytest.fixture
def nodes(hosts: Hosts) -> list[str]:
    made = [
        hosts.add("h1", resources={"vcpus": 16, "memory_mb": 32768, "local_gb": 500,
                                   "vcpus_used": 4, "memory_mb_used": 8192, "local_gb_used": 50,
                                   "running_vms": 2}),
        hosts.add("h2"),
        hosts.add("other", reported=False),
    ]  # fmt: skip
    assert all(made)
    return [node for node in made if node is not None]


def test_list(compute: httpx.Client, nodes: list[str]) -> None:
    listed = compute.get("/v2.1/os-hypervisors", headers=LATEST).json()["hypervisors"]
    assert listed[0] == {
        "id": nodes[0],
        "hypervisor_hostname": "h1",
        "state": "up",
        "status": "enabled",
    }
    assert [h["state"] for h in listed] == ["up", "up", "down"]
    old = compute.get("/v2.1/os-hypervisors").json()["hypervisors"]
    assert all(isinstance(h["id"], int) for h in old)


def test_detail(compute: httpx.Client, nodes: list[str]) -> None:
    detail = compute.get("/v2.1/os-hypervisors/detail", headers=LATEST).json()["hypervisors"]
    h1 = detail[0]
    assert (h1["vcpus"], h1["vcpus_used"], h1["memory_mb"], h1["free_ram_mb"]) == (
        16,
        4,
        32768,
        24576,
    )
    assert (h1["local_gb"], h1["free_disk_gb"], h1["running_vms"]) == (500, 450, 2)
    assert h1["service"]["host"] == "h1" and len(h1["service"]["id"]) == 36
    assert h1["cpu_info"] == {}
    before = compute.get("/v2.1/os-hypervisors/detail", headers=version(27)).json()
    assert before["hypervisors"][0]["cpu_info"] == "{}"
    assert isinstance(before["hypervisors"][0]["service"]["id"], int)


def test_show(compute: httpx.Client, nodes: list[str]) -> None:
    shown = compute.get(f"/v2.1/os-hypervisors/{nodes[1]}", headers=LATEST)
    assert shown.status_code == 200 and shown.json()["hypervisor"]["hypervisor_hostname"] == "h2"
    assert compute.get("/v2.1/os-hypervisors/42", headers=LATEST).status_code == 400
    missing = compute.get(
        "/v2.1/os-hypervisors/0b7c3b1e-0000-4000-8000-000000000000", headers=LATEST
    )
    assert missing.status_code == 404
    first_id = compute.get("/v2.1/os-hypervisors").json()["hypervisors"][0]["id"]
    by_number = compute.get(f"/v2.1/os-hypervisors/{first_id}")
    assert by_number.json()["hypervisor"]["hypervisor_hostname"] == "h1"
    assert compute.get("/v2.1/os-hypervisors/h1").status_code == 404


@pytest.mark.usefixtures("nodes")
def test_pages_from_2_33(compute: httpx.Client) -> None:
    first = compute.get("/v2.1/os-hypervisors", params={"limit": 2}, headers=version(33))
    assert [h["hypervisor_hostname"] for h in first.json()["hypervisors"]] == ["h1", "h2"]
    (link,) = first.json()["hypervisors_links"]
    rest = compute.get(link["href"], headers=version(33)).json()
    assert [h["hypervisor_hostname"] for h in rest["hypervisors"]] == ["other"]
    unpaged = compute.get("/v2.1/os-hypervisors", params={"limit": 2}, headers=version(32))
    assert len(unpaged.json()["hypervisors"]) == 3
    bad = compute.get("/v2.1/os-hypervisors", params={"marker": "x"}, headers=version(33))
    assert bad.status_code == 400


@pytest.mark.usefixtures("nodes")
def test_hostname_pattern(compute: httpx.Client) -> None:
    found = compute.get(
        "/v2.1/os-hypervisors", params={"hypervisor_hostname_pattern": "h"}, headers=LATEST
    )
    assert [h["hypervisor_hostname"] for h in found.json()["hypervisors"]] == ["h1", "h2", "other"]
    one = compute.get(
        "/v2.1/os-hypervisors/detail", params={"hypervisor_hostname_pattern": "2"}, headers=LATEST
    )
    assert [h["hypervisor_hostname"] for h in one.json()["hypervisors"]] == ["h2"]
    none = compute.get(
        "/v2.1/os-hypervisors", params={"hypervisor_hostname_pattern": "zz"}, headers=LATEST
    )
    assert none.status_code == 404
    paged = compute.get(
        "/v2.1/os-hypervisors",
        params={"hypervisor_hostname_pattern": "h", "limit": 1},
        headers=LATEST,
    )
    assert paged.status_code == 400


def test_with_servers(compute: httpx.Client, hosts: Hosts, nodes: list[str]) -> None:
    server = "3d0c5b7a-2222-4a1b-8c3d-000000000001"
    with hosts.cell_db.write() as conn:
        instances.create(
            conn,
            {
                "uuid": server, "project_id": "alice", "user_id": "alice", "display_name": "vm1",
                "vm_state": "active", "flavor": {}, "host": "h1", "node": "h1",
            },
        )  # fmt: skip
    listed = compute.get(
        "/v2.1/os-hypervisors", params={"with_servers": "true"}, headers=LATEST
    ).json()["hypervisors"]
    assert listed[0]["servers"] == [{"name": "vm1", "uuid": server}]
    assert "servers" not in listed[1]
    plain = compute.get("/v2.1/os-hypervisors", headers=LATEST).json()["hypervisors"]
    assert "servers" not in plain[0]


@pytest.mark.usefixtures("nodes")
def test_only_admins(alice: httpx.Client) -> None:
    assert alice.get("/v2.1/os-hypervisors").status_code == 403
    assert alice.get("/v2.1/os-hypervisors/detail").status_code == 403


def test_uptime_in_the_form_clients_parse(compute: httpx.Client, nodes: list[str]) -> None:
    answer = compute.get(f"/v2.1/os-hypervisors/{nodes[0]}/uptime", headers=LATEST)
    assert answer.status_code == 200, answer.text
    view = answer.json()["hypervisor"]
    assert view["hypervisor_hostname"] == "h1"
    assert re.match(r"\s*(.+)\sup\s+(.+),\s+(.+)\susers?,\s+load average:\s(.+)", view["uptime"])
    assert compute.get("/v2.1/os-hypervisors/42/uptime", headers=LATEST).status_code == 400


@pytest.mark.usefixtures("nodes")
def test_statistics_sum_the_nodes(compute: httpx.Client) -> None:
    answer = compute.get("/v2.1/os-hypervisors/statistics")
    assert answer.status_code == 200, answer.text
    stats = answer.json()["hypervisor_statistics"]
    assert (stats["count"], stats["vcpus"], stats["vcpus_used"]) == (3, 32, 4)
    assert stats["free_ram_mb"] == 24576 + 2 * 16384

"""The capacity view's JSON API on a real stack: its numbers are Placement's, its servers and
decisions Compute's, and it is behind the Compute API's authentication and policy."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

BRIDGE = {"physnets": ["public"], "egress_kbps": 1_000_000, "ingress_kbps": 1_000_000}
OVS = {"bridges": {"br-ex": BRIDGE}, "packet_rate_kpps": 1000}
FLEET = {
    "cells": ["cell1", "cell2"],
    "hosts": [
        {"name": "cn", "count": 2, "cell": "cell1", "vcpus": 8, "memory_mb": 16384,
         "disk_gb": 100, "ovs": OVS},
        {"name": "edge", "count": 3, "cell": "cell2", "vcpus": 4, "memory_mb": 8192,
         "disk_gb": 50, "ovs": OVS},
    ],
}  # fmt: skip


def _hosts(client: httpx.Client, **query: Any) -> dict[str, Any]:
    return w.ok(client.get("/dashboard/api/hosts", params=query))  # type: ignore[no-any-return]


def _usage(client: httpx.Client, provider: str) -> tuple[dict[str, int], dict[str, int]]:
    """Placement's own capacity and usage of a provider."""
    base = f"/placement/resource_providers/{provider}"
    inventories = w.ok(client.get(f"{base}/inventories", headers=w.PLACEMENT))["inventories"]
    usages = w.ok(client.get(f"{base}/usages", headers=w.PLACEMENT))["usages"]
    capacity = {
        rc: int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
        for rc, inv in inventories.items()
    }
    return capacity, usages


@pytest.fixture
def cloud(start_stack: StackFactory) -> tuple[httpx.Client, str, str]:
    """The fleet with one server holding a bridge's bandwidth, and one that found no host."""
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack, vcpus=2, ram=2048, disk=10)
    net = w.network(client)
    policy = w.bandwidth_policy(client, 100_000)
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": {
        "network_id": net, "qos_policy_id": policy}}))["port"]  # fmt: skip
    placed = w.boot(client, flavor, image, [{"port": port["id"]}], name="placed")
    assert w.wait(client, placed)["status"] == "ACTIVE"
    huge, _ = w.flavor_and_image(stack, vcpus=64, ram=2048, disk=10)
    failed = w.boot(client, huge, image, "none", name="too-big")
    assert w.wait(client, failed)["status"] == "ERROR"
    return client, placed, failed


def test_hosts_show_placements_used_and_capacity(cloud: tuple[httpx.Client, str, str]) -> None:
    client, placed, _ = cloud
    host = w.ok(client.get(f"/compute/v2.1/servers/{placed}"))["server"]["OS-EXT-SRV-ATTR:host"]
    page = _hosts(client)
    assert page["total"] == 5 and page["pages"] == 1
    assert [h["host"] for h in page["hosts"]] == ["cn1", "cn2", "edge1", "edge2", "edge3"]
    assert page["cells"] == ["cell1", "cell2"] and page["physnets"] == ["public"]
    for row in page["hosts"]:
        capacity, used = _usage(client, row["uuid"])
        for rc in ("VCPU", "MEMORY_MB", "DISK_GB"):
            assert row["compute"][rc] == {"used": used.get(rc, 0), "capacity": capacity[rc]}
        assert row["servers"] == (1 if row["host"] == host else 0)
        (device,) = row["devices"]
        assert device["name"] == "Open vSwitch agent:br-ex" and device["physnets"] == ["public"]
        allocated = w.allocations(client, placed)
        bridge = next(
            rp for rp in allocated if w.provider_name(client, rp) == f"{row['node']}:{device['name']}"
        ) if row["host"] == host else None  # fmt: skip
        egress = device["egress"]
        assert egress["capacity"] == 1_000_000
        assert egress["used"] == (
            allocated[bridge]["resources"]["NET_BW_EGR_KILOBIT_PER_SEC"] if bridge else 0
        )
        assert row["packet_rate"]["NET_PACKET_RATE_KILOPACKET_PER_SEC"]["capacity"] == 1000
    busy = next(h for h in page["hosts"] if h["host"] == host)
    assert busy["compute"]["VCPU"]["used"] == 2 and busy["devices"][0]["egress"]["used"] == 100_000
    # 4 VCPU per physical one: the default allocation ratio.
    assert page["totals"]["VCPU"] == {"used": 2, "capacity": (2 * 8 + 3 * 4) * 4}
    assert page["totals"]["NET_BW_EGR_KILOBIT_PER_SEC"] == {"used": 100_000, "capacity": 5_000_000}


def test_filters_sorting_and_pages(cloud: tuple[httpx.Client, str, str]) -> None:
    client, placed, _ = cloud
    host = w.ok(client.get(f"/compute/v2.1/servers/{placed}"))["server"]["OS-EXT-SRV-ATTR:host"]
    cell2 = _hosts(client, cell="cell2")
    assert [h["host"] for h in cell2["hosts"]] == ["edge1", "edge2", "edge3"]
    assert cell2["totals"]["VCPU"] == {"used": 0, "capacity": 3 * 4 * 4}
    assert [h["host"] for h in _hosts(client, q="DGE2")["hosts"]] == ["edge2"]
    assert _hosts(client, physnet="elsewhere")["total"] == 0
    assert _hosts(client, sort="-vcpu")["hosts"][0]["host"] == host
    assert _hosts(client, sort="-bandwidth")["hosts"][0]["host"] == host
    first, second, past = (_hosts(client, per_page=2, page=n) for n in (1, 2, 4))
    assert (first["pages"], first["total"]) == (3, 5)
    assert [h["host"] for h in first["hosts"] + second["hosts"]] == ["cn1", "cn2", "edge1", "edge2"]
    assert past["hosts"] == [] and past["total"] == 5


def test_an_aggregate_is_a_filter(cloud: tuple[httpx.Client, str, str]) -> None:
    client, _, _ = cloud
    aggregate = w.ok(client.post("/compute/v2.1/os-aggregates",
                                 json={"aggregate": {"name": "fast", "availability_zone": "az-fast"}}))  # fmt: skip
    w.ok(client.post(f"/compute/v2.1/os-aggregates/{aggregate['aggregate']['id']}/action",
                     json={"add_host": {"host": "edge3"}}))  # fmt: skip
    page = _hosts(client, aggregate="fast")
    assert [(h["host"], h["aggregates"], h["zone"]) for h in page["hosts"]] == [
        ("edge3", ["fast"], "az-fast")
    ]
    assert page["aggregates"] == ["fast"]


def test_a_hosts_servers(cloud: tuple[httpx.Client, str, str]) -> None:
    client, placed, _ = cloud
    host = w.ok(client.get(f"/compute/v2.1/servers/{placed}"))["server"]["OS-EXT-SRV-ATTR:host"]
    answer = w.ok(client.get(f"/dashboard/api/hosts/{host}/servers"))
    ((server,),) = [answer["servers"]]
    assert (server["id"], server["name"], server["status"]) == (placed, "placed", "ACTIVE")
    assert server["flavor"] == {"name": "test-2-2048-10", "vcpus": 2, "ram": 2048, "disk": 10}
    missing = client.get("/dashboard/api/hosts/nowhere/servers")
    assert missing.status_code == 404 and "nowhere" in missing.json()["error"]["message"]


def test_decisions_explain_a_server_that_found_no_host(
    cloud: tuple[httpx.Client, str, str],
) -> None:
    client, placed, failed = cloud
    decisions = w.ok(client.get("/dashboard/api/decisions"))["decisions"]
    assert [d["server_id"] for d in decisions] == [failed, placed]
    no_host, ok = decisions
    assert (ok["outcome"], ok["cell"], ok["explanation"]) == ("placed", "cell1", None)
    assert (no_host["outcome"], no_host["cell"], no_host["host"]) == ("no host", "cell0", None)
    explanation = no_host["explanation"]
    assert explanation["summary"].startswith("0/5 hosts are available")
    assert explanation["groups"] == [
        {"name": "flavor", "met_alone": False, "short": ["no provider has 64 VCPU"]}
    ]
    assert no_host["fault"].startswith("No valid host was found.")
    assert len(w.ok(client.get("/dashboard/api/decisions?limit=1"))["decisions"]) == 1


def test_the_page_is_public_its_data_is_for_admins(start_stack: StackFactory) -> None:
    _, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1}]})
    anonymous = httpx.Client(transport=client._transport, base_url="http://berth")
    page = anonymous.get("/dashboard")
    assert page.status_code == 200 and '<base href="/dashboard/">' in page.text
    assert anonymous.get("/dashboard/static/dashboard.js").status_code == 200
    assert anonymous.get("/dashboard/static/..%2Fapp.py").status_code == 404
    config = anonymous.get("/dashboard/api/config").json()
    assert config == {"auth": "noauth2", "identity": None, "compute": "/compute/v2.1",
                      "image": "/image"}  # fmt: skip
    for path in ("/dashboard/api/hosts", "/dashboard/api/decisions"):
        assert anonymous.get(path).status_code == 401
        refused = anonymous.get(path, headers={"x-auth-token": "demo:demo"})
        assert refused.status_code == 403, refused.text
        assert "Policy doesn't allow" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("sort=weight", "Cannot sort by 'weight'"),
        ("page=0", "'page' must be 1 or more"),
        ("per_page=501", "'per_page' must be 1 to 500"),
        ("page=two", "must be a whole number"),
        ("colour=red", "Unknown query parameter 'colour'"),
        ("q=a&q=b", "more than once"),
    ],
)
def test_a_bad_query_is_a_400_that_says_why(
    start_stack: StackFactory, query: str, words: str
) -> None:
    _, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1}]})
    answer = client.get(f"/dashboard/api/hosts?{query}")
    assert answer.status_code == 400 and words in answer.json()["error"]["message"], answer.text
    assert client.post("/dashboard/api/hosts").status_code == 405
    assert client.get("/dashboard/api/decisions?limit=0").status_code == 400

"""Server groups: the scheduler sees where the group's members already are."""

from __future__ import annotations

import uuid

from berth.compute.db import server_groups
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "vcpus": 8,
    "memory_mb": 16384,
    "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"]}}},
}


def _group(stack: object, policy: str) -> str:
    group = str(uuid.uuid4())
    with stack.api_db.write() as conn:  # type: ignore[attr-defined]
        server_groups.create(conn, group, f"g-{policy}", "admin", "admin", policy)
    return group


def test_anti_affinity_spreads_and_then_refuses(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    group = _group(stack, "anti-affinity")
    hints = {"os:scheduler_hints": {"group": group}}
    hosts = []
    for i in range(3):
        body = {
            "server": {
                "name": f"vm{i}",
                "flavorRef": flavor,
                "imageRef": image,
                "networks": [{"uuid": net}],
            },
            **hints,
        }
        server_id = w.ok(client.post("/compute/v2.1/servers", json=body, headers=w.COMPUTE))[
            "server"
        ]["id"]
        server = w.wait(client, server_id)
        hosts.append(
            server.get("OS-EXT-SRV-ATTR:host")
            if server["status"] == "ACTIVE"
            else server["fault"]["message"]
        )
    assert sorted(hosts[:2]) == ["cn1", "cn2"]
    assert "ServerGroupAntiAffinityFilter removed 2" in hosts[2], hosts[2]


def test_affinity_keeps_members_together(start_stack: StackFactory) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    group = _group(stack, "affinity")
    hosts = set()
    for i in range(3):
        body = {"server": {"name": f"vm{i}", "flavorRef": flavor, "imageRef": image, "networks": [{"uuid": net}]},
                "os:scheduler_hints": {"group": group}}  # fmt: skip
        server_id = w.ok(client.post("/compute/v2.1/servers", json=body, headers=w.COMPUTE))[
            "server"
        ]["id"]
        hosts.add(w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"])
    assert len(hosts) == 1


def test_simultaneous_boots_of_an_anti_affinity_group_never_share_a_host(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **HOST}]})
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    group = _group(stack, "anti-affinity")
    # Four separate requests at once: the scheduler sees no member placed for any of them, and
    # picks the same best host for several; only the group's admission in the API database
    # keeps them apart, and the fourth has no host left.
    servers = [
        w.ok(
            client.post(
                "/compute/v2.1/servers",
                json={
                    "server": {
                        "name": f"vm{i}", "flavorRef": flavor, "imageRef": image,
                        "networks": [{"uuid": net}],
                    },
                    "os:scheduler_hints": {"group": group},
                },
                headers=w.COMPUTE,
            )
        )["server"]["id"]
        for i in range(4)
    ]  # fmt: skip
    ended = [w.wait(client, server_id) for server_id in servers]
    hosts = [s["OS-EXT-SRV-ATTR:host"] for s in ended if s["status"] == "ACTIVE"]
    assert sorted(hosts) == ["cn1", "cn2", "cn3"], [s.get("fault") for s in ended]
    assert [s["status"] for s in ended].count("ERROR") == 1

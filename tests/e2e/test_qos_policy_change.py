"""A booted server's QoS port takes another policy: its allocation follows on the same bridge,
or the change is refused with the reason and nothing moves."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip


def _start(start_stack: StackFactory) -> tuple[httpx.Client, str, str, str]:
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "cn", **OVS_HOST}]})
    flavor, image = w.flavor_and_image(stack)
    return client, flavor, image, w.network(client)


def _boot(
    client: httpx.Client, flavor: str, image: str, network: str, policy: str
) -> tuple[str, dict[str, Any]]:
    body = {"port": {"network_id": network, "qos_policy_id": policy}}
    port = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]
    server = w.wait(client, w.boot(client, flavor, image, [{"port": port["id"]}]))
    assert server["status"] == "ACTIVE", server.get("fault")
    return server["id"], _port(client, port["id"])


def _port(client: httpx.Client, port_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]  # type: ignore[no-any-return]


def _resources(client: httpx.Client, server_id: str) -> dict[str, dict[str, int]]:
    return {rp: held["resources"] for rp, held in w.allocations(client, server_id).items()}


def _bridge(client: httpx.Client, port: dict[str, Any]) -> str:
    ((_, bridge),) = port["binding:profile"]["allocation"].items()
    assert w.provider_name(client, bridge).endswith(":br-ex")
    return str(bridge)


def _used(client: httpx.Client, provider: str) -> dict[str, int]:
    path = f"/placement/resource_providers/{provider}/usages"
    return w.ok(client.get(path, headers=w.PLACEMENT))["usages"]  # type: ignore[no-any-return]


def _set_policy(client: httpx.Client, port_id: str, policy: str | None) -> httpx.Response:
    body = {"port": {"qos_policy_id": policy}}
    return client.put(f"/networking/v2.0/ports/{port_id}", json=body)


def _refused(answer: httpx.Response) -> str:
    assert answer.status_code == 409, answer.text
    error = answer.json()["NeutronError"]
    assert error["type"] == "QosPolicyChangeRefused", error
    return str(error["message"])


def test_a_bound_ports_new_policy_changes_its_allocation_in_place(
    start_stack: StackFactory,
) -> None:
    client, flavor, image, network = _start(start_stack)
    server_id, port = _boot(client, flavor, image, network, w.bandwidth_policy(client, 4000))
    bridge = _bridge(client, port)
    before = _resources(client, server_id)
    assert before[bridge] == {EGR: 4000}

    bigger = w.bandwidth_policy(client, 6000)
    w.ok(_set_policy(client, port["id"], bigger))
    grown = _resources(client, server_id)
    assert grown == {**before, bridge: {EGR: 6000}}
    assert _used(client, bridge)[EGR] == 6000
    changed = _port(client, port["id"])
    assert changed["binding:profile"] == port["binding:profile"]
    assert changed["resource_request"]["request_groups"][0]["resources"] == {EGR: 6000}

    too_big = w.bandwidth_policy(client, 20000)
    message = _refused(_set_policy(client, port["id"], too_big))
    assert message.startswith("placement-refused")
    assert bridge in message and EGR in message
    assert _resources(client, server_id) == grown
    assert _port(client, port["id"])["qos_policy_id"] == bigger
    assert _port(client, port["id"])["binding:profile"] == port["binding:profile"]

    limit_only = w.ok(
        client.post("/networking/v2.0/qos/policies", json={"policy": {"name": "limit"}})
    )["policy"]["id"]
    w.ok(
        client.post(
            f"/networking/v2.0/qos/policies/{limit_only}/bandwidth_limit_rules",
            json={"bandwidth_limit_rule": {"max_kbps": 9000}},
        )
    )
    w.ok(_set_policy(client, port["id"], limit_only))
    dropped = _resources(client, server_id)
    assert dropped == {rp: held for rp, held in before.items() if rp != bridge}
    assert _used(client, bridge)[EGR] == 0
    unbound = _port(client, port["id"])
    assert "allocation" not in unbound["binding:profile"]
    assert unbound["resource_request"] is None

    # Back to a minimum: the port has no allocation to grow on, a new provider would have to
    # be chosen.
    message = _refused(_set_policy(client, port["id"], bigger))
    assert message.startswith("no-allocation")
    assert _resources(client, server_id) == dropped


def test_a_rule_change_follows_every_bound_port_using_the_policy_or_none(
    start_stack: StackFactory,
) -> None:
    client, flavor, image, network = _start(start_stack)
    policy = w.bandwidth_policy(client, 3000)
    first, port = _boot(client, flavor, image, network, policy)
    second, _ = _boot(client, flavor, image, network, policy)
    bridge = _bridge(client, port)
    (rule,) = w.ok(client.get(f"/networking/v2.0/qos/policies/{policy}/minimum_bandwidth_rules"))[
        "minimum_bandwidth_rules"
    ]
    path = f"/networking/v2.0/qos/policies/{policy}/minimum_bandwidth_rules/{rule['id']}"

    w.ok(client.put(path, json={"minimum_bandwidth_rule": {"min_kbps": 4000}}))
    assert _resources(client, first)[bridge] == _resources(client, second)[bridge] == {EGR: 4000}
    assert _used(client, bridge)[EGR] == 8000

    # The bridge's 10000 takes one server at 6000 beside the other at 4000, not both at 6000:
    # the rewrite Placement took for one server (the lower id, written first) is undone when it
    # refuses the other's.
    generations = {s: _generation(client, s) for s in (first, second)}
    message = _refused(client.put(path, json={"minimum_bandwidth_rule": {"min_kbps": 6000}}))
    assert message.startswith("placement-refused") and bridge in message
    assert _resources(client, first)[bridge] == _resources(client, second)[bridge] == {EGR: 4000}
    assert _used(client, bridge)[EGR] == 8000
    assert w.ok(client.get(path))["minimum_bandwidth_rule"]["min_kbps"] == 4000
    undone, untouched = sorted(generations)
    assert _generation(client, undone) == generations[undone] + 2
    assert _generation(client, untouched) == generations[untouched]


def _generation(client: httpx.Client, server_id: str) -> int:
    path = f"/placement/allocations/{server_id}"
    return int(w.ok(client.get(path, headers=w.PLACEMENT))["consumer_generation"])

"""Opt-in queueing: a server that fits nowhere waits in BUILD, holding nothing, and boots once
room is freed, or goes to ERROR with the NoValidHost explanation when its timeout passes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from berth import config
from berth.allinone.stack import Stack
from berth.common.inprocess import InProcessTransport
from berth.compute.db import build_queue
from berth.compute.host import fleet as fleets
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

BRIDGE = {"physnets": ["public"], "egress_kbps": 10_000, "ingress_kbps": 10_000}
FLEET = {
    "cells": ["cell1"],
    "hosts": [{"name": "cn", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
               "ovs": {"bridges": {"br-ex": BRIDGE}}}],
}  # fmt: skip
# 6,000 of the bridge's 10,000 kbps: one server at a time.
KBPS = 6_000
QUICK = {"queue_retry_interval": 0.3}


def _qos_network(client: httpx.Client) -> str:
    net = w.network(client)
    policy = w.bandwidth_policy(client, KBPS)
    w.ok(
        client.put(f"/networking/v2.0/networks/{net}", json={"network": {"qos_policy_id": policy}})
    )
    return net


def _hint(seconds: Any) -> dict[str, Any]:
    return {"os:scheduler_hints": {"queue_timeout": seconds}}


def _boot(client: httpx.Client, flavor: str, image: str, net: str, **extra: Any) -> str:
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": [{"uuid": net}]}, **extra}  # fmt: skip
    answer = client.post("/compute/v2.1/servers", json=body, headers=w.COMPUTE)
    return str(w.ok(answer)["server"]["id"])


def _server(client: httpx.Client, server_id: str) -> dict[str, Any]:
    return w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=w.COMPUTE))["server"]  # type: ignore[no-any-return]


def _queued(stack: Stack, server_id: str) -> dict[str, Any]:
    """The server's row in the build queue, once it is queued."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with stack.api_db.read() as conn:
            row = build_queue.get(conn, server_id)
        if row is not None:
            return dict(row)
        time.sleep(0.05)
    raise AssertionError(f"server {server_id} was not queued")


def _waits_holding_nothing(
    stack: Stack, client: httpx.Client, server_id: str, seconds: float
) -> None:
    """Once queued, the server stays in BUILD (task scheduling) and in the queue for
    ``seconds``, with no allocation and no port, while the queue is worked again."""
    tries = attempts = _queued(stack, server_id)["attempts"]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        server = _server(client, server_id)
        assert (server["status"], server["OS-EXT-STS:task_state"]) == ("BUILD", "scheduling")
        assert w.allocations(client, server_id) == {}
        ports = w.ok(client.get(f"/networking/v2.0/ports?device_id={server_id}"))["ports"]
        assert ports == []
        with stack.api_db.read() as conn:
            row = build_queue.get(conn, server_id)
        assert row is not None, "left the queue while it should wait"
        attempts = row["attempts"]
        time.sleep(0.1)
    assert attempts > tries  # tried again meanwhile


def test_a_queued_server_boots_when_room_is_freed(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET, **QUICK)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    first = w.wait(client, _boot(client, flavor, image, net))
    assert first["status"] == "ACTIVE"
    queued = _boot(client, flavor, image, net, **_hint(60))
    _waits_holding_nothing(stack, client, queued, 1.5)

    w.ok(client.delete(f"/compute/v2.1/servers/{first['id']}", headers=w.COMPUTE))
    server = w.wait(client, queued, timeout=30)
    assert server["status"] == "ACTIVE", server
    assert server["OS-EXT-SRV-ATTR:host"] == "cn"
    with stack.api_db.read() as conn:
        assert build_queue.list_queued(conn) == []


def test_a_queued_server_errors_after_its_timeout(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET, **QUICK)
    flavor, image = w.flavor_and_image(stack)
    w.ok(client.post(f"/compute/v2.1/flavors/{flavor}/os-extra_specs", headers=w.COMPUTE,
                     json={"extra_specs": {"berth:queue_timeout": "2"}}))  # fmt: skip
    net = _qos_network(client)
    assert w.wait(client, _boot(client, flavor, image, net))["status"] == "ACTIVE"
    started = time.monotonic()
    queued = _boot(client, flavor, image, net)
    # Its deadline, kept to the second, may come 1 s after it was queued: watch less than that
    # (the queue is worked every 0.3 s).
    _waits_holding_nothing(stack, client, queued, 0.5)
    server = w.wait(client, queued, timeout=30)
    assert server["status"] == "ERROR", server
    # Times are kept to the second: the deadline is 2 s after a second at most 1 s earlier.
    assert time.monotonic() - started >= 1
    fault = server["fault"]
    assert fault["message"].startswith("No valid host was found. 0/1 hosts are available")
    assert "waited" in fault["details"] and "in the queue" in fault["details"]
    diagnosis = w.ok(client.get(f"/compute/v2.1/os-berth-diagnosis/{queued}"))["diagnosis"]
    assert diagnosis["server_id"] == queued and diagnosis["fault_message"] == fault["message"]


def test_a_server_that_does_not_ask_to_wait_errors_at_once(start_stack: StackFactory) -> None:
    stack, client = start_stack(FLEET, **QUICK)
    flavor, image = w.flavor_and_image(stack)
    net = _qos_network(client)
    assert w.wait(client, _boot(client, flavor, image, net))["status"] == "ACTIVE"
    # The hint 0 overrides a flavor that would queue.
    w.ok(client.post(f"/compute/v2.1/flavors/{flavor}/os-extra_specs", headers=w.COMPUTE,
                     json={"extra_specs": {"berth:queue_timeout": "600"}}))  # fmt: skip
    server = w.wait(client, _boot(client, flavor, image, net, **_hint("0")), timeout=5)
    assert server["status"] == "ERROR"


@pytest.mark.parametrize("hint", ["soon", -1, 10**9, True])
def test_a_bad_timeout_is_a_400(start_stack: StackFactory, hint: Any) -> None:
    stack, client = start_stack(FLEET)
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": [{"uuid": net}]}, **_hint(hint)}  # fmt: skip
    answer = client.post("/compute/v2.1/servers", json=body, headers=w.COMPUTE)
    assert answer.status_code == 400 and "queue_timeout" in answer.text, answer.text
    spec = client.post(f"/compute/v2.1/flavors/{flavor}/os-extra_specs", headers=w.COMPUTE,
                       json={"extra_specs": {"berth:queue_timeout": "soon"}})  # fmt: skip
    assert spec.status_code == 400 and "berth:queue_timeout" in spec.text


def test_the_queue_survives_a_restart(tmp_path: Path) -> None:
    settings = config.Settings(data_dir=tmp_path / "data", compute=config.ComputeSettings(**QUICK))

    def start() -> tuple[Stack, httpx.Client]:
        stack = Stack(settings, fleets.parse(FLEET), heartbeat_seconds=5)
        stack.start()
        client = httpx.Client(
            transport=InProcessTransport(stack.app()), base_url="http://berth", timeout=60
        )
        client.headers["x-auth-token"] = "admin"
        return stack, client

    stack, client = start()
    try:
        flavor, image = w.flavor_and_image(stack)
        net = _qos_network(client)
        first = w.wait(client, _boot(client, flavor, image, net))["id"]
        queued = _boot(client, flavor, image, net, **_hint(120))
        _waits_holding_nothing(stack, client, queued, 1.0)
    finally:
        client.close()
        stack.stop()
    stack, client = start()
    try:
        _waits_holding_nothing(stack, client, queued, 1.0)
        w.ok(client.delete(f"/compute/v2.1/servers/{first}", headers=w.COMPUTE))
        assert w.wait(client, queued, timeout=30)["status"] == "ACTIVE"
    finally:
        client.close()
        stack.stop()

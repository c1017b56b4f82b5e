"""Failures on the chosen host move the build to its alternates, within its cell."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

from berth.common.timeutils import utcnow
from berth.compute.db import instances
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip


def test_a_failed_spawn_moves_to_an_alternate_and_releases_the_first_host(
    start_stack: StackFactory,
) -> None:
    # The failing host has the most free memory, so the RAM weigher chooses it first every time.
    failing = {**HOST, "memory_mb": 65536, "driver": {"fail": "always"}}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "bad", **failing}, {"name": "good", **HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    for i in range(4):  # one after the other, so each sees the failures before it
        server_id = w.boot(client, flavor, image, [{"uuid": net}], name=f"vm{i}")
        server = w.wait(client, server_id)
        assert (server["status"], server["OS-EXT-SRV-ATTR:host"]) == ("ACTIVE", "good"), server.get(
            "fault"
        )
        names = {w.provider_name(client, rp) for rp in w.allocations(client, server_id)}
        assert names == {"good"}, names  # nothing left on the failed host
    bad = stack.agents["bad"].node_uuid
    usage = w.ok(client.get(f"/placement/resource_providers/{bad}/usages", headers=w.PLACEMENT))[
        "usages"
    ]
    assert not any(usage.values())
    # The first failure counts against the host (build-failure weigher): the next servers are
    # not sent there at all, although it has the most free memory.
    cell = stack.compute.cells.cell_of_host("bad")
    assert cell is not None
    with stack.compute.cells.database(cell).read() as conn:
        failures = instances.failures_since(conn, utcnow() - dt.timedelta(hours=1))
        assert [host for _, host in failures] == ["bad"]


def test_when_every_host_fails_the_fault_names_each_host(start_stack: StackFactory) -> None:
    failing = {**HOST, "driver": {"fail": "always"}}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 3, **failing}]}
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    server = w.wait(client, server_id)
    assert server["status"] == "ERROR"
    message = server["fault"]["message"]
    assert "failed on every host tried (3)" in message and all(
        f"cn{i}" in message for i in (1, 2, 3)
    ), message
    assert w.allocations(client, server_id) == {}
    # The port Berth made for the server is gone, and its address with it.
    ports = w.ok(client.get("/networking/v2.0/ports", params={"device_id": server_id}))["ports"]
    assert ports == []
    availability = w.ok(client.get(f"/networking/v2.0/network-ip-availabilities/{net}"))
    assert availability["network_ip_availability"]["used_ips"] == 0


def test_alternates_stay_in_the_chosen_hosts_cell(start_stack: StackFactory) -> None:
    failing = {**HOST, "driver": {"fail": "always"}}
    stack, client = start_stack({
        "cells": ["cell1", "cell2"],
        "hosts": [{"name": "a", "count": 2, "cell": "cell1", **failing},
                  {"name": "b", "count": 2, "cell": "cell2", **HOST}],
    })  # fmt: skip
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    outcomes = set()
    for i in range(6):
        server_id = w.boot(client, flavor, image, [{"uuid": net}], name=f"vm{i}")
        server = w.wait(client, server_id)
        cell = w.cell_of(stack, server_id)
        if server["status"] == "ACTIVE":
            assert (cell, server["OS-EXT-SRV-ATTR:host"][0]) == ("cell2", "b")
        else:
            # Chosen in cell1: its alternates were cell1's hosts only, which all fail.
            assert cell == "cell1" and "(2)" in server["fault"]["message"], server["fault"]
            assert "b1" not in server["fault"]["message"] and "b2" not in server["fault"]["message"]
        outcomes.add(server["status"])
    assert "ACTIVE" in outcomes


def test_a_scheduler_too_slow_to_answer_leaves_the_server_in_error_holding_nothing(
    start_stack: StackFactory,
) -> None:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]},
        rpc_response_timeout=0.5,
    )
    flavor, image = w.flavor_and_image(stack)
    net = w.network(client)
    slow = stack.placement_client.allocation_candidates_body
    finished = threading.Event()

    def after_the_deadline(params: Any) -> bytes:
        time.sleep(1.0)
        try:
            return slow(params)
        finally:
            finished.set()

    stack.placement_client.allocation_candidates_body = after_the_deadline  # type: ignore[method-assign]
    server_id = w.boot(client, flavor, image, [{"uuid": net}])
    server = w.wait(client, server_id)
    assert server["status"] == "ERROR"
    assert "did not answer within 0.5 s" in server["fault"]["message"]
    # The scheduler finishes late: it claims nothing, and nothing the build had is left.
    assert finished.wait(5)
    time.sleep(0.2)
    assert w.allocations(client, server_id) == {}
    ports = w.ok(client.get("/networking/v2.0/ports", params={"device_id": server_id}))["ports"]
    assert ports == []

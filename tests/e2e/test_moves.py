"""Cold migrate and resize, confirmed and reverted, failing and not, with QoS and SR-IOV ports:
who holds which allocation at each step, where each port is bound and with which providers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from berth.allinone.stack import Stack
from berth.compute.audit import audit
from berth.compute.db import flavors
from berth.compute.db.cell_schema import pci_devices
from berth.compute.heal import heal
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
MICROVERSION = {"openstack-api-version": "compute 2.64"}


def _ovs_stack(
    start_stack: StackFactory, count: int = 3, **compute: Any
) -> tuple[Stack, httpx.Client]:
    return start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": count, **OVS_HOST}]}, **compute
    )


def _qos_server(stack: Stack, client: httpx.Client, kbps: int = 4000) -> tuple[str, str, str]:
    """A server with a QoS port, ACTIVE: its id, the port's id and the flavor's."""
    flavor, image = w.flavor_and_image(stack)
    body = {
        "port": {"network_id": w.network(client), "qos_policy_id": w.bandwidth_policy(client, kbps)}
    }
    port = w.ok(client.post("/networking/v2.0/ports", json=body))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return server_id, port["id"], flavor


def _action(client: httpx.Client, server_id: str, body: Any, status: int = 202) -> httpx.Response:
    answer = client.post(
        f"/compute/v2.1/servers/{server_id}/action", json=body, headers=MICROVERSION
    )
    assert answer.status_code == status, answer.text
    return answer


def _wait_status(
    client: httpx.Client, server_id: str, status: str, timeout: float = 30
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}", headers=MICROVERSION))[
            "server"
        ]
        if server["status"] == status and server["OS-EXT-STS:task_state"] is None:
            return server  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"{server_id} is {server['status']}, not {status}"
        time.sleep(0.05)


def _migrations(client: httpx.Client, server_id: str) -> list[dict[str, Any]]:
    headers = {"openstack-api-version": "compute 2.59"}
    answer = w.ok(
        client.get(
            "/compute/v2.1/os-migrations", params={"instance_uuid": server_id}, headers=headers
        )
    )
    return answer["migrations"]  # type: ignore[no-any-return]


def _wait_migration(client: httpx.Client, server_id: str, status: str) -> None:
    """Until the server's newest migration has ``status``."""
    deadline = time.monotonic() + 30
    while True:
        found = _migrations(client, server_id)
        if found and found[0]["status"] == status:
            return
        assert time.monotonic() < deadline, found
        time.sleep(0.05)


def _held(client: httpx.Client, consumer: str) -> dict[str, dict[str, int]]:
    """Provider name -> resources the consumer holds there."""
    return {
        w.provider_name(client, rp): a["resources"]
        for rp, a in w.allocations(client, consumer).items()
    }


def _usages(client: httpx.Client) -> dict[str, dict[str, int]]:
    """Provider name -> its non-zero usages."""
    found = {}
    providers = w.ok(client.get("/placement/resource_providers", headers=w.PLACEMENT))[
        "resource_providers"
    ]
    for provider in providers:
        usages = w.ok(
            client.get(
                f"/placement/resource_providers/{provider['uuid']}/usages", headers=w.PLACEMENT
            )
        )["usages"]
        used = {rc: n for rc, n in usages.items() if n}
        if used:
            found[provider["name"]] = used
    return found


def _sum(*holdings: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    total: dict[str, dict[str, int]] = {}
    for held in holdings:
        for provider, resources in held.items():
            for rc, amount in resources.items():
                total.setdefault(provider, {}).setdefault(rc, 0)
                total[provider][rc] += amount
    return total


def _binding(client: httpx.Client, port_id: str) -> tuple[str, dict[str, str]]:
    """The host the port is bound to, and the provider names of its request groups."""
    port = w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]
    allocation = port["binding:profile"].get("allocation", {})
    return port["binding:host_id"], {g: w.provider_name(client, rp) for g, rp in allocation.items()}


def _assert_clean(stack: Stack) -> None:
    """The audit finds nothing, and heal-allocations would change nothing."""
    report = audit(stack.compute.cells, stack.placement_client, stack.network_client)
    assert report.clean, report.lines()
    healed = heal(stack.compute.cells, stack.placement_client, stack.network_client, dry_run=True)
    assert (healed.actions, healed.failures) == ([], []), healed.actions


def test_a_cold_migration_parks_the_source_on_the_migration_until_confirmed(
    start_stack: StackFactory,
) -> None:
    stack, client = _ovs_stack(start_stack)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before = _held(client, server_id)
    assert before[f"{source}:Open vSwitch agent:br-ex"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 4000}
    bound_host, groups = _binding(client, port_id)
    assert (bound_host, set(groups.values())) == (source, {f"{source}:Open vSwitch agent:br-ex"})

    _action(client, server_id, {"migrate": None})
    server = _wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert dest != source
    (migration,) = _migrations(client, server_id)
    assert (migration["status"], migration["migration_type"]) == ("finished", "migration")
    assert (migration["source_compute"], migration["dest_compute"]) == (source, dest)
    # The migration holds the source as it was; the server holds the destination, same amounts.
    assert _held(client, migration["uuid"]) == before
    after = _held(client, server_id)
    assert after == {name.replace(source, dest): held for name, held in before.items()}
    assert _usages(client) == _sum(before, after)
    moved = {group: name.replace(source, dest) for group, name in groups.items()}
    assert _binding(client, port_id) == (dest, moved)
    _assert_clean(stack)

    _action(client, server_id, {"confirmResize": None}, status=204)
    _wait_status(client, server_id, "ACTIVE")
    assert w.allocations(client, migration["uuid"]) == {}
    assert _usages(client) == after
    assert _migrations(client, server_id)[0]["status"] == "confirmed"
    events = _events(client, server_id, "confirmResize")
    assert [(e["event"], e["result"]) for e in events] == [("compute_confirm_resize", "Success")]
    _assert_clean(stack)


def _events(client: httpx.Client, server_id: str, action: str) -> list[dict[str, Any]]:
    headers = {"openstack-api-version": "compute 2.62"}
    found = w.ok(
        client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions", headers=headers)
    )["instanceActions"]
    request_id = next(a["request_id"] for a in found if a["action"] == action)
    shown = w.ok(
        client.get(
            f"/compute/v2.1/servers/{server_id}/os-instance-actions/{request_id}", headers=headers
        )
    )
    return shown["instanceAction"]["events"]  # type: ignore[no-any-return]


def _bigger_flavor(stack: Stack) -> str:
    with stack.api_db.write() as conn:
        flavors.create(conn, "test-4-4096-20", "test-4-4096-20", 4, 4096, 20)
    return "test-4-4096-20"


def test_a_reverted_resize_gives_the_source_back_as_it_was(start_stack: StackFactory) -> None:
    stack, client = _ovs_stack(start_stack, count=2)
    server_id, port_id, old_flavor = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = _held(client, server_id), _binding(client, port_id)
    port_before = w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]["binding:profile"]

    _action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    server = _wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert server["flavor"]["vcpus"] == 4
    (migration,) = _migrations(client, server_id)
    assert migration["migration_type"] == "resize"
    assert migration["old_instance_type_id"] != migration["new_instance_type_id"]
    assert _held(client, server_id)[dest] == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}
    assert _held(client, migration["uuid"]) == before
    assert _binding(client, port_id)[0] == dest

    _action(client, server_id, {"revertResize": None})
    server = _wait_status(client, server_id, "ACTIVE")
    assert (server["OS-EXT-SRV-ATTR:host"], server["flavor"]["vcpus"]) == (source, 2)
    assert _held(client, server_id) == before
    assert w.allocations(client, migration["uuid"]) == {}
    assert _usages(client) == before
    assert _binding(client, port_id) == bound_before
    assert (
        w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]["binding:profile"]
        == port_before
    )
    assert _migrations(client, server_id)[0]["status"] == "reverted"
    assert server["flavor"]["original_name"] == old_flavor
    _assert_clean(stack)


def test_a_move_whose_destinations_all_fail_leaves_the_server_where_it_was(
    start_stack: StackFactory,
) -> None:
    stack, client = _ovs_stack(start_stack, count=3)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = _held(client, server_id), _binding(client, port_id)
    for name, agent in stack.agents.items():
        agent.driver.failures.always = name != source

    _action(client, server_id, {"migrate": None})
    _wait_migration(client, server_id, "error")
    server = _wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == source
    assert _held(client, server_id) == before
    assert _usages(client) == before  # nothing left on either destination tried
    assert _binding(client, port_id) == bound_before
    events = _events(client, server_id, "migrate")
    finished = [e for e in events if e["event"] == "compute_finish_resize"]
    assert len(finished) == 2 and all(e["result"] == "Error" for e in finished)
    assert {e["host"] for e in finished} == set(stack.agents) - {source}
    with stack.compute.cells.database(
        stack.compute.cells.cells(include_cell0=False)[0]
    ).read() as conn:
        held_vfs = conn.execute(
            sa.select(pci_devices).where(pci_devices.c.instance_uuid == server_id)
        ).all()
    assert held_vfs == []
    _assert_clean(stack)


def test_a_move_that_fits_nowhere_changes_nothing(start_stack: StackFactory) -> None:
    stack, client = _ovs_stack(start_stack, count=1)
    server_id, port_id, _ = _qos_server(stack, client)
    before, bound_before = _held(client, server_id), _binding(client, port_id)

    _action(client, server_id, {"migrate": None})
    _wait_migration(client, server_id, "error")
    _wait_status(client, server_id, "ACTIVE")
    assert _held(client, server_id) == before
    assert _binding(client, port_id) == bound_before
    (event,) = _events(client, server_id, "migrate")
    assert (event["event"], event["result"]) == ("conductor_migrate_server", "Error")
    assert "No valid host" in event["traceback"]
    _assert_clean(stack)


def test_an_sriov_server_moves_with_its_virtual_function(start_stack: StackFactory) -> None:
    pfs = {"ens1f0": {"physnet": "physnet1", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000}}
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "sr", "count": 2, **host}]})
    flavor, image = w.flavor_and_image(stack)
    body = {
        "network_id": w.network(client, "physnet1", "10.1.0.0/24"),
        "qos_policy_id": w.bandwidth_policy(client, 3000),
        "binding:vnic_type": "direct",
    }
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])

    def vfs() -> list[str]:
        query = (
            sa.select(pci_devices.c.status)
            .where(pci_devices.c.instance_uuid == server_id)
            .order_by(pci_devices.c.compute_node_id)
        )
        with cell_db.read() as conn:
            return [row.status for row in conn.execute(query)]

    assert vfs() == ["allocated"]
    _action(client, server_id, {"migrate": None})
    server = _wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert vfs() == ["allocated", "allocated"]  # one on each host until the move is confirmed
    host_bound, groups = _binding(client, port["id"])
    assert (host_bound, set(groups.values())) == (dest, {f"{dest}:NIC Switch agent:ens1f0"})

    _action(client, server_id, {"confirmResize": None}, status=204)
    _wait_status(client, server_id, "ACTIVE")
    assert vfs() == ["allocated"]
    assert set(_held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert source not in "".join(_usages(client))
    _assert_clean(stack)


def test_deleting_a_server_waiting_in_verify_resize_releases_both_ends(
    start_stack: StackFactory,
) -> None:
    stack, client = _ovs_stack(start_stack, count=2)
    server_id, _, _ = _qos_server(stack, client)
    _action(client, server_id, {"migrate": None})
    _wait_status(client, server_id, "VERIFY_RESIZE")
    (migration,) = _migrations(client, server_id)
    w.ok(client.delete(f"/compute/v2.1/servers/{server_id}"))
    w.wait_gone(client, server_id)
    assert w.allocations(client, migration["uuid"]) == {}
    assert _usages(client) == {}
    _assert_clean(stack)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"confirmResize": None}, 409, "vm_state active"),
        ({"revertResize": None}, 409, "vm_state active"),
        ({"resize": {"flavorRef": "test-2-2048-10"}}, 400, "must change flavor"),
        ({"resize": {"flavorRef": "no-such-flavor"}}, 400, "flavor"),
        ({"resize": {}}, 400, "flavorRef"),
        ({"migrate": {"host": "cn1"}}, 400, "2.56"),
        ({"noSuchAction": None}, 400, "There is no such action: noSuchAction"),
    ],
)
def test_moves_that_cannot_be_are_refused(
    start_stack: StackFactory, body: dict[str, Any], status: int, message: str
) -> None:
    stack, client = _ovs_stack(start_stack, count=1)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    headers = {"openstack-api-version": "compute 2.55"}
    answer = client.post(f"/compute/v2.1/servers/{server_id}/action", json=body, headers=headers)
    assert answer.status_code == status, answer.text
    (error,) = answer.json().values()
    assert message in error["message"]
    assert _migrations(client, server_id) == []


def test_a_migration_to_a_named_host(start_stack: StackFactory) -> None:
    stack, client = _ovs_stack(start_stack, count=3)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    source = w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"]
    target = sorted(set(stack.agents) - {source})[-1]
    headers = {"openstack-api-version": "compute 2.56"}
    for host, status in (("nowhere", 400), (source, 400)):
        answer = client.post(
            f"/compute/v2.1/servers/{server_id}/action",
            json={"migrate": {"host": host}},
            headers=headers,
        )
        assert answer.status_code == status, answer.text
    w.ok(
        client.post(
            f"/compute/v2.1/servers/{server_id}/action",
            json={"migrate": {"host": target}},
            headers=headers,
        )
    )
    assert _wait_status(client, server_id, "VERIFY_RESIZE")["OS-EXT-SRV-ATTR:host"] == target
    (migration,) = _migrations(client, server_id)
    assert migration["dest_compute"] == target
    old = w.ok(
        client.get("/compute/v2.1/os-migrations", headers={"openstack-api-version": "compute 2.1"})
    )
    assert "migration_type" not in old["migrations"][0] and "uuid" not in old["migrations"][0]


def _live(client: httpx.Client, server_id: str, host: str | None = None) -> None:
    body = {"os-migrateLive": {"host": host, "block_migration": "auto"}}
    _action(client, server_id, body)


def _bindings(client: httpx.Client, port_id: str) -> list[tuple[str, str]]:
    found = w.ok(client.get(f"/networking/v2.0/ports/{port_id}/bindings"))["bindings"]
    return sorted((b["host"], b["status"]) for b in found)


def test_a_live_migration_switches_the_bindings_over_and_releases_the_source(
    start_stack: StackFactory,
) -> None:
    stack, client = _ovs_stack(start_stack, count=3)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before = _held(client, server_id)
    _, groups = _binding(client, port_id)
    target = sorted(set(stack.agents) - {source})[0]

    _live(client, server_id, target)
    _wait_migration(client, server_id, "completed")
    server = _wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == target
    (migration,) = _migrations(client, server_id)
    assert (migration["migration_type"], migration["source_compute"]) == ("live-migration", source)
    after = _held(client, server_id)
    assert after == {name.replace(source, target): held for name, held in before.items()}
    assert w.allocations(client, migration["uuid"]) == {}
    assert _usages(client) == after
    moved = {group: name.replace(source, target) for group, name in groups.items()}
    assert _binding(client, port_id) == (target, moved)
    assert _bindings(client, port_id) == [(target, "ACTIVE")]
    events = [
        (e["event"], e["host"], e["result"]) for e in _events(client, server_id, "live-migration")
    ]
    assert sorted(events) == sorted([
        ("conductor_live_migrate_instance", "", "Success"),
        ("compute_pre_live_migration", target, "Success"),
        ("compute_post_live_migration", source, "Success"),
    ])  # fmt: skip
    _assert_clean(stack)


def test_a_refused_destination_binding_aborts_the_live_migration(start_stack: StackFactory) -> None:
    # The second host's bridge serves another physical network: the port cannot bind there.
    other = {**OVS_HOST, "ovs": {"bridges": {"br-ex": {"physnets": ["other"]}}}}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "a", **OVS_HOST}, {"name": "b", **other}]}
    )
    flavor, image = w.flavor_and_image(stack)
    port = w.ok(
        client.post("/networking/v2.0/ports", json={"port": {"network_id": w.network(client)}})
    )["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    assert w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"] == "a"
    before, bound_before = _held(client, server_id), _binding(client, port["id"])

    _live(client, server_id)
    _wait_migration(client, server_id, "error")
    server = _wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == "a"
    assert _held(client, server_id) == before
    assert _usages(client) == before
    assert _binding(client, port["id"]) == bound_before
    assert _bindings(client, port["id"]) == [("a", "ACTIVE")]
    (event,) = _events(client, server_id, "live-migration")
    assert event["result"] == "Error" and "b:" in event["traceback"]
    assert not stack.agents["b"].driver.running
    _assert_clean(stack)


def test_a_live_migration_whose_copies_fail_to_start_leaves_nothing_behind(
    start_stack: StackFactory,
) -> None:
    stack, client = _ovs_stack(start_stack, count=3)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = _held(client, server_id), _binding(client, port_id)
    for name, agent in stack.agents.items():
        agent.driver.failures.always = name != source

    _live(client, server_id)
    _wait_migration(client, server_id, "error")
    _wait_status(client, server_id, "ACTIVE")
    assert _held(client, server_id) == before
    assert _usages(client) == before
    assert _binding(client, port_id) == bound_before
    assert _bindings(client, port_id) == [(source, "ACTIVE")]
    tried = [
        e
        for e in _events(client, server_id, "live-migration")
        if e["event"] == "compute_pre_live_migration"
    ]
    assert sorted(e["host"] for e in tried) == sorted(set(stack.agents) - {source})
    _assert_clean(stack)


def test_an_sriov_server_live_migrates_with_its_virtual_function(start_stack: StackFactory) -> None:
    pfs = {"ens1f0": {"physnet": "physnet1", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000}}
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    stack, client = start_stack({"cells": ["cell1"], "hosts": [{"name": "sr", "count": 2, **host}]})
    flavor, image = w.flavor_and_image(stack)
    body = {
        "network_id": w.network(client, "physnet1", "10.1.0.0/24"),
        "qos_policy_id": w.bandwidth_policy(client, 3000),
        "binding:vnic_type": "direct",
    }
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    source = w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"]
    _live(client, server_id)
    _wait_migration(client, server_id, "completed")
    dest = _wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    assert dest != source
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])
    with cell_db.read() as conn:
        held = conn.execute(
            sa.select(pci_devices.c.status).where(pci_devices.c.instance_uuid == server_id)
        ).all()
    assert [row.status for row in held] == ["allocated"]
    assert set(_held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert _bindings(client, port["id"]) == [(dest, "ACTIVE")]
    _assert_clean(stack)


def _two_cells(
    start_stack: StackFactory, tmp_path: Path, cross_cell: bool = True
) -> tuple[Stack, httpx.Client]:
    """One host in each of two cells; moves between cells allowed to admins when ``cross_cell``."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        '"compute:servers:resize:cross_cell": "rule:context_is_admin"\n' if cross_cell else "{}\n"
    )
    fleet = {
        "cells": ["cell1", "cell2"],
        "hosts": [
            {"name": "left", "cell": "cell1", **OVS_HOST},
            {"name": "right", "cell": "cell2", **OVS_HOST},
        ],
    }
    return start_stack(fleet, policy_file=str(policy))


def _rows_in(stack: Stack, cell_name: str, server_id: str) -> list[Any]:
    from berth.compute.db import instances

    (cell,) = (c for c in stack.compute.cells.cells() if c.name == cell_name)
    with stack.compute.cells.database(cell).read() as conn:
        return [row for row in [instances.get(conn, server_id)] if row is not None]


def test_a_server_moves_to_another_cell_with_its_records_and_stays_when_confirmed(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    stack, client = _two_cells(start_stack, tmp_path)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    dest = {"left": "right", "right": "left"}[source]
    source_cell, dest_cell = (
        w.cell_of(stack, server_id),
        {"cell1": "cell2", "cell2": "cell1"}[w.cell_of(stack, server_id)],
    )
    before = _held(client, server_id)
    _, groups = _binding(client, port_id)

    _action(client, server_id, {"migrate": None})
    server = _wait_status(client, server_id, "VERIFY_RESIZE")
    assert (server["OS-EXT-SRV-ATTR:host"], w.cell_of(stack, server_id)) == (dest, dest_cell)
    (migration,) = _migrations(client, server_id)
    assert (migration["source_compute"], migration["dest_compute"], migration["status"]) == (
        source,
        dest,
        "finished",
    )
    assert _held(client, migration["uuid"]) == before
    after = _held(client, server_id)
    assert after == {name.replace(source, dest): held for name, held in before.items()}
    assert _binding(client, port_id) == (
        dest,
        {g: n.replace(source, dest) for g, n in groups.items()},
    )
    listed = w.ok(client.get("/compute/v2.1/servers"))["servers"]
    assert [s["id"] for s in listed] == [server_id]
    assert {a["action"] for a in _actions(client, server_id)} == {"create", "migrate"}
    _assert_clean(stack)

    _action(client, server_id, {"confirmResize": None}, status=204)
    _wait_status(client, server_id, "ACTIVE")
    _wait_migration(client, server_id, "confirmed")
    assert w.allocations(client, migration["uuid"]) == {}
    assert _usages(client) == after
    assert _rows_in(stack, source_cell, server_id) == []
    deadline = time.monotonic() + 10
    while stack.agents[source].driver.running and time.monotonic() < deadline:
        time.sleep(0.05)  # the source host drops its copy after the confirm is answered
    assert not stack.agents[source].driver.running
    _assert_clean(stack)


def test_a_server_moved_to_another_cell_comes_back_when_reverted(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    stack, client = _two_cells(start_stack, tmp_path)
    server_id, port_id, _ = _qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    source_cell = w.cell_of(stack, server_id)
    before, bound_before = _held(client, server_id), _binding(client, port_id)

    _action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    _wait_status(client, server_id, "VERIFY_RESIZE")
    dest_cell = w.cell_of(stack, server_id)
    assert dest_cell != source_cell
    _action(client, server_id, {"revertResize": None})
    server = _wait_status(client, server_id, "ACTIVE")
    assert (server["OS-EXT-SRV-ATTR:host"], server["flavor"]["vcpus"]) == (source, 2)
    assert w.cell_of(stack, server_id) == source_cell
    assert _held(client, server_id) == before
    assert _usages(client) == before
    assert _binding(client, port_id) == bound_before
    assert _rows_in(stack, dest_cell, server_id) == []
    assert [m["status"] for m in _migrations(client, server_id)] == ["reverted"]
    assert {a["action"] for a in _actions(client, server_id)} == {
        "create",
        "resize",
        "revertResize",
    }
    _assert_clean(stack)


def test_a_move_between_cells_needs_the_rule_and_a_failed_one_leaves_nothing(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    stack, client = _two_cells(start_stack, tmp_path, cross_cell=False)
    server_id, port_id, _ = _qos_server(stack, client)
    before = _held(client, server_id)
    _action(client, server_id, {"migrate": None})
    _wait_migration(client, server_id, "error")
    _wait_status(client, server_id, "ACTIVE")
    assert _held(client, server_id) == before
    _assert_clean(stack)

    allowed, client2 = _two_cells(start_stack, tmp_path)
    server_id, port_id, _ = _qos_server(allowed, client2)
    source = w.ok(client2.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    source_cell = w.cell_of(allowed, server_id)
    before, bound_before = _held(client2, server_id), _binding(client2, port_id)
    allowed.agents[{"left": "right", "right": "left"}[source]].driver.failures.always = True
    _action(client2, server_id, {"migrate": None})
    _wait_migration(client2, server_id, "error")
    _wait_status(client2, server_id, "ACTIVE")
    assert w.cell_of(allowed, server_id) == source_cell
    assert _held(client2, server_id) == before
    assert _usages(client2) == before
    assert _binding(client2, port_id) == bound_before
    other = {"cell1": "cell2", "cell2": "cell1"}[source_cell]
    assert _rows_in(allowed, other, server_id) == []
    _assert_clean(allowed)


def _actions(client: httpx.Client, server_id: str) -> list[dict[str, Any]]:
    return w.ok(client.get(f"/compute/v2.1/servers/{server_id}/os-instance-actions"))[
        "instanceActions"
    ]  # type: ignore[no-any-return]


def test_an_sriov_server_moves_to_another_cell_with_its_virtual_function(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text('"compute:servers:resize:cross_cell": "rule:context_is_admin"\n')
    pfs = {"ens1f0": {"physnet": "physnet1", "vfs": 2, "egress_kbps": 10000, "ingress_kbps": 10000}}
    host = {"vcpus": 16, "memory_mb": 32768, "disk_gb": 100, "sriov": {"pfs": pfs}}
    fleet = {
        "cells": ["cell1", "cell2"],
        "hosts": [
            {"name": "left", "cell": "cell1", **host},
            {"name": "right", "cell": "cell2", **host},
        ],
    }
    stack, client = start_stack(fleet, policy_file=str(policy))
    flavor, image = w.flavor_and_image(stack)
    body = {
        "network_id": w.network(client, "physnet1", "10.1.0.0/24"),
        "qos_policy_id": w.bandwidth_policy(client, 3000),
        "binding:vnic_type": "direct",
    }
    port = w.ok(client.post("/networking/v2.0/ports", json={"port": body}))["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    source = w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"]
    dest = {"left": "right", "right": "left"}[source]
    cells = {
        c.name: stack.compute.cells.database(c)
        for c in stack.compute.cells.cells(include_cell0=False)
    }

    def vfs() -> dict[str, list[str]]:
        found = {}
        for name, db in cells.items():
            with db.read() as conn:
                query = sa.select(pci_devices.c.status).where(
                    pci_devices.c.instance_uuid == server_id
                )
                found[name] = [row.status for row in conn.execute(query)]
        return found

    source_cell = w.cell_of(stack, server_id)
    dest_cell = {"cell1": "cell2", "cell2": "cell1"}[source_cell]
    _action(client, server_id, {"migrate": None})
    assert _wait_status(client, server_id, "VERIFY_RESIZE")["OS-EXT-SRV-ATTR:host"] == dest
    assert vfs() == {source_cell: ["allocated"], dest_cell: ["allocated"]}
    assert set(_held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert _bindings(client, port["id"]) == [(dest, "ACTIVE")]
    _action(client, server_id, {"confirmResize": None}, status=204)
    _wait_migration(client, server_id, "confirmed")
    _wait_status(client, server_id, "ACTIVE")
    deadline = time.monotonic() + 10
    while vfs()[source_cell] and time.monotonic() < deadline:
        time.sleep(0.05)  # the source host drops its copy after the confirm is answered
    assert vfs() == {source_cell: [], dest_cell: ["allocated"]}
    _assert_clean(stack)


def test_a_resize_past_the_projects_cores_is_refused(start_stack: StackFactory) -> None:
    stack, client = _ovs_stack(start_stack, count=2)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    w.ok(client.put("/compute/v2.1/os-quota-sets/admin", json={"quota_set": {"cores": 3}}))
    answer = client.post(
        f"/compute/v2.1/servers/{server_id}/action",
        json={"resize": {"flavorRef": _bigger_flavor(stack)}},
    )
    assert answer.status_code == 403, answer.text
    assert "cores" in answer.json()["forbidden"]["message"]
    assert _migrations(client, server_id) == []
    smaller = w.flavor_and_image(stack, vcpus=1, ram=1024)[0]
    _action(client, server_id, {"resize": {"flavorRef": smaller}})
    assert _wait_status(client, server_id, "VERIFY_RESIZE")["flavor"]["vcpus"] == 1


def test_a_confirmed_resize_is_what_later_moves_and_heal_see(start_stack: StackFactory) -> None:
    stack, client = _ovs_stack(start_stack, count=3)
    server_id, _, _ = _qos_server(stack, client)
    _action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    _wait_status(client, server_id, "VERIFY_RESIZE")
    _action(client, server_id, {"confirmResize": None}, status=204)
    host = _wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    _assert_clean(stack)
    _action(client, server_id, {"migrate": None})
    server = _wait_status(client, server_id, "VERIFY_RESIZE")
    assert server["OS-EXT-SRV-ATTR:host"] != host
    assert _held(client, server_id)[server["OS-EXT-SRV-ATTR:host"]] == {
        "VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20,
    }  # fmt: skip
    _assert_clean(stack)

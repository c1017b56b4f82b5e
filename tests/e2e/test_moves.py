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
from berth.compute.db import flavors
from berth.compute.db.cell_schema import pci_devices
from tests.e2e import moving as mv
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory


def test_a_cold_migration_parks_the_source_on_the_migration_until_confirmed(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before = mv.held(client, server_id)
    assert before[f"{source}:Open vSwitch agent:br-ex"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 4000}
    bound_host, groups = mv.binding(client, port_id)
    assert (bound_host, set(groups.values())) == (source, {f"{source}:Open vSwitch agent:br-ex"})

    mv.action(client, server_id, {"migrate": None})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert dest != source
    (migration,) = mv.migrations(client, server_id)
    assert (migration["status"], migration["migration_type"]) == ("finished", "migration")
    assert (migration["source_compute"], migration["dest_compute"]) == (source, dest)
    # The migration holds the source as it was; the server holds the destination, same amounts.
    assert mv.held(client, migration["uuid"]) == before
    after = mv.held(client, server_id)
    assert after == {name.replace(source, dest): held for name, held in before.items()}
    assert mv.usages(client) == mv.total(before, after)
    moved = {group: name.replace(source, dest) for group, name in groups.items()}
    assert mv.binding(client, port_id) == (dest, moved)
    mv.assert_clean(stack)

    mv.action(client, server_id, {"confirmResize": None}, status=204)
    mv.wait_status(client, server_id, "ACTIVE")
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == after
    assert mv.migrations(client, server_id)[0]["status"] == "confirmed"
    events = mv.events(client, server_id, "confirmResize")
    assert [(e["event"], e["result"]) for e in events] == [("compute_confirm_resize", "Success")]
    mv.assert_clean(stack)


def _bigger_flavor(stack: Stack) -> str:
    with stack.api_db.write() as conn:
        flavors.create(conn, "test-4-4096-20", "test-4-4096-20", 4, 4096, 20)
    return "test-4-4096-20"


def test_a_reverted_resize_gives_the_source_back_as_it_was(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    server_id, port_id, old_flavor = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)
    port_before = w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]["binding:profile"]

    mv.action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert server["flavor"]["vcpus"] == 4
    (migration,) = mv.migrations(client, server_id)
    assert migration["migration_type"] == "resize"
    assert migration["old_instance_type_id"] != migration["new_instance_type_id"]
    assert mv.held(client, server_id)[dest] == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}
    assert mv.held(client, migration["uuid"]) == before
    assert mv.binding(client, port_id)[0] == dest

    mv.action(client, server_id, {"revertResize": None})
    server = mv.wait_status(client, server_id, "ACTIVE")
    assert (server["OS-EXT-SRV-ATTR:host"], server["flavor"]["vcpus"]) == (source, 2)
    assert mv.held(client, server_id) == before
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == before
    assert mv.binding(client, port_id) == bound_before
    assert (
        w.ok(client.get(f"/networking/v2.0/ports/{port_id}"))["port"]["binding:profile"]
        == port_before
    )
    assert mv.migrations(client, server_id)[0]["status"] == "reverted"
    assert server["flavor"]["original_name"] == old_flavor
    mv.assert_clean(stack)


def test_a_move_whose_destinations_all_fail_leaves_the_server_where_it_was(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)
    for name, agent in stack.agents.items():
        agent.driver.failures.always = name != source

    mv.action(client, server_id, {"migrate": None})
    mv.wait_migration(client, server_id, "error")
    server = mv.wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == source
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before  # nothing left on either destination tried
    assert mv.binding(client, port_id) == bound_before
    events = mv.events(client, server_id, "migrate")
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
    mv.assert_clean(stack)


def test_a_move_that_fits_nowhere_changes_nothing(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=1)
    server_id, port_id, _ = mv.qos_server(stack, client)
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)

    mv.action(client, server_id, {"migrate": None})
    mv.wait_migration(client, server_id, "error")
    mv.wait_status(client, server_id, "ACTIVE")
    assert mv.held(client, server_id) == before
    assert mv.binding(client, port_id) == bound_before
    (event,) = mv.events(client, server_id, "migrate")
    assert (event["event"], event["result"]) == ("conductor_migrate_server", "Error")
    assert "No valid host" in event["traceback"]
    mv.assert_clean(stack)


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
    mv.action(client, server_id, {"migrate": None})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert vfs() == ["allocated", "allocated"]  # one on each host until the move is confirmed
    host_bound, groups = mv.binding(client, port["id"])
    assert (host_bound, set(groups.values())) == (dest, {f"{dest}:NIC Switch agent:ens1f0"})

    mv.action(client, server_id, {"confirmResize": None}, status=204)
    mv.wait_status(client, server_id, "ACTIVE")
    assert vfs() == ["allocated"]
    assert set(mv.held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert source not in "".join(mv.usages(client))
    mv.assert_clean(stack)


def test_deleting_a_server_waiting_in_verify_resize_releases_both_ends(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    server_id, _, _ = mv.qos_server(stack, client)
    mv.action(client, server_id, {"migrate": None})
    mv.wait_status(client, server_id, "VERIFY_RESIZE")
    (migration,) = mv.migrations(client, server_id)
    w.ok(client.delete(f"/compute/v2.1/servers/{server_id}"))
    w.wait_gone(client, server_id)
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == {}
    mv.assert_clean(stack)


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
    stack, client = mv.ovs_stack(start_stack, count=1)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    headers = {"openstack-api-version": "compute 2.55"}
    answer = client.post(f"/compute/v2.1/servers/{server_id}/action", json=body, headers=headers)
    assert answer.status_code == status, answer.text
    (error,) = answer.json().values()
    assert message in error["message"]
    assert mv.migrations(client, server_id) == []


def test_a_migration_to_a_named_host(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
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
    assert mv.wait_status(client, server_id, "VERIFY_RESIZE")["OS-EXT-SRV-ATTR:host"] == target
    (migration,) = mv.migrations(client, server_id)
    assert migration["dest_compute"] == target
    old = w.ok(
        client.get("/compute/v2.1/os-migrations", headers={"openstack-api-version": "compute 2.1"})
    )
    assert "migration_type" not in old["migrations"][0] and "uuid" not in old["migrations"][0]


def _live(client: httpx.Client, server_id: str, host: str | None = None) -> None:
    body = {"os-migrateLive": {"host": host, "block_migration": "auto"}}
    mv.action(client, server_id, body)


def _bindings(client: httpx.Client, port_id: str) -> list[tuple[str, str]]:
    found = w.ok(client.get(f"/networking/v2.0/ports/{port_id}/bindings"))["bindings"]
    return sorted((b["host"], b["status"]) for b in found)


def test_a_live_migration_switches_the_bindings_over_and_releases_the_source(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before = mv.held(client, server_id)
    _, groups = mv.binding(client, port_id)
    target = sorted(set(stack.agents) - {source})[0]

    _live(client, server_id, target)
    mv.wait_migration(client, server_id, "completed")
    server = mv.wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == target
    (migration,) = mv.migrations(client, server_id)
    assert (migration["migration_type"], migration["source_compute"]) == ("live-migration", source)
    after = mv.held(client, server_id)
    assert after == {name.replace(source, target): held for name, held in before.items()}
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == after
    moved = {group: name.replace(source, target) for group, name in groups.items()}
    assert mv.binding(client, port_id) == (target, moved)
    assert _bindings(client, port_id) == [(target, "ACTIVE")]
    events = [
        (e["event"], e["host"], e["result"]) for e in mv.events(client, server_id, "live-migration")
    ]
    assert sorted(events) == sorted([
        ("conductor_live_migrate_instance", "", "Success"),
        ("compute_pre_live_migration", target, "Success"),
        ("compute_post_live_migration", source, "Success"),
    ])  # fmt: skip
    mv.assert_clean(stack)


def test_a_refused_destination_binding_aborts_the_live_migration(start_stack: StackFactory) -> None:
    # The second host's bridge serves another physical network: the port cannot bind there.
    other = {**mv.OVS_HOST, "ovs": {"bridges": {"br-ex": {"physnets": ["other"]}}}}
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "a", **mv.OVS_HOST}, {"name": "b", **other}]}
    )
    flavor, image = w.flavor_and_image(stack)
    port = w.ok(
        client.post("/networking/v2.0/ports", json={"port": {"network_id": w.network(client)}})
    )["port"]
    server_id = w.boot(client, flavor, image, [{"port": port["id"]}])
    assert w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"] == "a"
    before, bound_before = mv.held(client, server_id), mv.binding(client, port["id"])

    _live(client, server_id)
    mv.wait_migration(client, server_id, "error")
    server = mv.wait_status(client, server_id, "ACTIVE")
    assert server["OS-EXT-SRV-ATTR:host"] == "a"
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before
    assert mv.binding(client, port["id"]) == bound_before
    assert _bindings(client, port["id"]) == [("a", "ACTIVE")]
    (event,) = mv.events(client, server_id, "live-migration")
    assert event["result"] == "Error" and "b:" in event["traceback"]
    assert not stack.agents["b"].driver.running
    mv.assert_clean(stack)


def test_a_live_migration_whose_copies_fail_to_start_leaves_nothing_behind(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)
    for name, agent in stack.agents.items():
        agent.driver.failures.always = name != source

    _live(client, server_id)
    mv.wait_migration(client, server_id, "error")
    mv.wait_status(client, server_id, "ACTIVE")
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before
    assert mv.binding(client, port_id) == bound_before
    assert _bindings(client, port_id) == [(source, "ACTIVE")]
    tried = [
        e
        for e in mv.events(client, server_id, "live-migration")
        if e["event"] == "compute_pre_live_migration"
    ]
    assert sorted(e["host"] for e in tried) == sorted(set(stack.agents) - {source})
    mv.assert_clean(stack)


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
    mv.wait_migration(client, server_id, "completed")
    dest = mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    assert dest != source
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])
    with cell_db.read() as conn:
        held = conn.execute(
            sa.select(pci_devices.c.status).where(pci_devices.c.instance_uuid == server_id)
        ).all()
    assert [row.status for row in held] == ["allocated"]
    assert set(mv.held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert _bindings(client, port["id"]) == [(dest, "ACTIVE")]
    mv.assert_clean(stack)


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
            {"name": "left", "cell": "cell1", **mv.OVS_HOST},
            {"name": "right", "cell": "cell2", **mv.OVS_HOST},
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
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    dest = {"left": "right", "right": "left"}[source]
    source_cell, dest_cell = (
        w.cell_of(stack, server_id),
        {"cell1": "cell2", "cell2": "cell1"}[w.cell_of(stack, server_id)],
    )
    before = mv.held(client, server_id)
    _, groups = mv.binding(client, port_id)

    mv.action(client, server_id, {"migrate": None})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    assert (server["OS-EXT-SRV-ATTR:host"], w.cell_of(stack, server_id)) == (dest, dest_cell)
    (migration,) = mv.migrations(client, server_id)
    assert (migration["source_compute"], migration["dest_compute"], migration["status"]) == (
        source,
        dest,
        "finished",
    )
    assert mv.held(client, migration["uuid"]) == before
    after = mv.held(client, server_id)
    assert after == {name.replace(source, dest): held for name, held in before.items()}
    assert mv.binding(client, port_id) == (
        dest,
        {g: n.replace(source, dest) for g, n in groups.items()},
    )
    listed = w.ok(client.get("/compute/v2.1/servers"))["servers"]
    assert [s["id"] for s in listed] == [server_id]
    assert {a["action"] for a in _actions(client, server_id)} == {"create", "migrate"}
    mv.assert_clean(stack)

    mv.action(client, server_id, {"confirmResize": None}, status=204)
    mv.wait_status(client, server_id, "ACTIVE")
    mv.wait_migration(client, server_id, "confirmed")
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == after
    assert _rows_in(stack, source_cell, server_id) == []
    deadline = time.monotonic() + 10
    while stack.agents[source].driver.running and time.monotonic() < deadline:
        time.sleep(0.05)  # the source host drops its copy after the confirm is answered
    assert not stack.agents[source].driver.running
    mv.assert_clean(stack)


def test_a_server_moved_to_another_cell_comes_back_when_reverted(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    stack, client = _two_cells(start_stack, tmp_path)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    source_cell = w.cell_of(stack, server_id)
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)

    mv.action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    mv.wait_status(client, server_id, "VERIFY_RESIZE")
    dest_cell = w.cell_of(stack, server_id)
    assert dest_cell != source_cell
    mv.action(client, server_id, {"revertResize": None})
    server = mv.wait_status(client, server_id, "ACTIVE")
    assert (server["OS-EXT-SRV-ATTR:host"], server["flavor"]["vcpus"]) == (source, 2)
    assert w.cell_of(stack, server_id) == source_cell
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before
    assert mv.binding(client, port_id) == bound_before
    assert _rows_in(stack, dest_cell, server_id) == []
    assert [m["status"] for m in mv.migrations(client, server_id)] == ["reverted"]
    assert {a["action"] for a in _actions(client, server_id)} == {
        "create",
        "resize",
        "revertResize",
    }
    mv.assert_clean(stack)


def test_a_move_between_cells_needs_the_rule_and_a_failed_one_leaves_nothing(
    start_stack: StackFactory, tmp_path: Path
) -> None:
    stack, client = _two_cells(start_stack, tmp_path, cross_cell=False)
    server_id, port_id, _ = mv.qos_server(stack, client)
    before = mv.held(client, server_id)
    mv.action(client, server_id, {"migrate": None})
    mv.wait_migration(client, server_id, "error")
    mv.wait_status(client, server_id, "ACTIVE")
    assert mv.held(client, server_id) == before
    mv.assert_clean(stack)

    allowed, client2 = _two_cells(start_stack, tmp_path)
    server_id, port_id, _ = mv.qos_server(allowed, client2)
    source = w.ok(client2.get(f"/compute/v2.1/servers/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:host"
    ]
    source_cell = w.cell_of(allowed, server_id)
    before, bound_before = mv.held(client2, server_id), mv.binding(client2, port_id)
    allowed.agents[{"left": "right", "right": "left"}[source]].driver.failures.always = True
    mv.action(client2, server_id, {"migrate": None})
    mv.wait_migration(client2, server_id, "error")
    mv.wait_status(client2, server_id, "ACTIVE")
    assert w.cell_of(allowed, server_id) == source_cell
    assert mv.held(client2, server_id) == before
    assert mv.usages(client2) == before
    assert mv.binding(client2, port_id) == bound_before
    other = {"cell1": "cell2", "cell2": "cell1"}[source_cell]
    assert _rows_in(allowed, other, server_id) == []
    mv.assert_clean(allowed)


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
    mv.action(client, server_id, {"migrate": None})
    assert mv.wait_status(client, server_id, "VERIFY_RESIZE")["OS-EXT-SRV-ATTR:host"] == dest
    assert vfs() == {source_cell: ["allocated"], dest_cell: ["allocated"]}
    assert set(mv.held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert _bindings(client, port["id"]) == [(dest, "ACTIVE")]
    mv.action(client, server_id, {"confirmResize": None}, status=204)
    mv.wait_migration(client, server_id, "confirmed")
    mv.wait_status(client, server_id, "ACTIVE")
    deadline = time.monotonic() + 10
    while vfs()[source_cell] and time.monotonic() < deadline:
        time.sleep(0.05)  # the source host drops its copy after the confirm is answered
    assert vfs() == {source_cell: [], dest_cell: ["allocated"]}
    mv.assert_clean(stack)


def test_a_resize_past_the_projects_cores_is_refused(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
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
    assert mv.migrations(client, server_id) == []
    smaller = w.flavor_and_image(stack, vcpus=1, ram=1024)[0]
    mv.action(client, server_id, {"resize": {"flavorRef": smaller}})
    assert mv.wait_status(client, server_id, "VERIFY_RESIZE")["flavor"]["vcpus"] == 1


def test_a_confirmed_resize_is_what_later_moves_and_heal_see(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
    server_id, _, _ = mv.qos_server(stack, client)
    mv.action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    mv.wait_status(client, server_id, "VERIFY_RESIZE")
    mv.action(client, server_id, {"confirmResize": None}, status=204)
    host = mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"]
    mv.assert_clean(stack)
    mv.action(client, server_id, {"migrate": None})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    assert server["OS-EXT-SRV-ATTR:host"] != host
    assert mv.held(client, server_id)[server["OS-EXT-SRV-ATTR:host"]] == {
        "VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20,
    }  # fmt: skip
    mv.assert_clean(stack)


def test_a_resize_on_the_same_host_holds_both_flavors_there_until_confirmed(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=1, allow_resize_to_same_host=True)
    server_id, port_id, _ = mv.qos_server(stack, client)
    before = mv.held(client, server_id)
    bound_before = mv.binding(client, port_id)

    mv.action(client, server_id, {"resize": {"flavorRef": _bigger_flavor(stack)}})
    server = mv.wait_status(client, server_id, "VERIFY_RESIZE")
    assert server["OS-EXT-SRV-ATTR:host"] == "cn1"
    (migration,) = mv.migrations(client, server_id)
    assert mv.held(client, migration["uuid"]) == before
    after = mv.held(client, server_id)
    assert after["cn1"] == {"VCPU": 4, "MEMORY_MB": 4096, "DISK_GB": 20}
    assert mv.usages(client) == mv.total(before, after)
    assert mv.binding(client, port_id) == bound_before
    mv.assert_clean(stack)

    mv.action(client, server_id, {"confirmResize": None}, status=204)
    mv.wait_status(client, server_id, "ACTIVE")
    assert mv.usages(client) == after
    assert stack.agents["cn1"].driver.running == {server_id}
    mv.assert_clean(stack)

"""Evacuating a server off a host that is down, with QoS and SR-IOV ports: the migration holds
the failed host until it comes back, the server holds its destination, the ports are bound there
with its providers; failures leave the server on its source as it was."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from berth.allinone.stack import Stack
from berth.compute.conductor import claims
from berth.compute.db import instances
from berth.compute.db.cell_schema import pci_devices
from tests.e2e import moving as mv
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

LATEST = {"openstack-api-version": "compute 2.64"}


def _host_of(client: httpx.Client, server_id: str) -> str:
    server = w.ok(client.get(f"/compute/v2.1/servers/{server_id}"))["server"]
    return str(server["OS-EXT-SRV-ATTR:host"])


def _force_down(client: httpx.Client, host: str, down: bool = True) -> None:
    """The host's compute service forced down (or up again) by an operator (2.53)."""
    headers = {"openstack-api-version": "compute 2.53"}
    (service,) = w.ok(
        client.get(
            "/compute/v2.1/os-services",
            params={"host": host, "binary": "nova-compute"},
            headers=headers,
        )
    )["services"]
    w.ok(
        client.put(
            f"/compute/v2.1/os-services/{service['id']}",
            json={"forced_down": down},
            headers=headers,
        )
    )


def _comes_back(stack: Stack, client: httpx.Client, host: str) -> None:
    """The failed host's service is up again and its agent starts, as after a repair."""
    _force_down(client, host, down=False)
    stack.agents[host].start()


def _evacuate(
    client: httpx.Client,
    server_id: str,
    argument: dict[str, Any],
    headers: dict[str, str] = LATEST,
) -> httpx.Response:
    return client.post(
        f"/compute/v2.1/servers/{server_id}/action", json={"evacuate": argument}, headers=headers
    )


def test_an_evacuated_server_holds_its_destination_and_the_migration_its_failed_host(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = _host_of(client, server_id)
    before, (_, groups) = mv.held(client, server_id), mv.binding(client, port_id)
    _force_down(client, source)

    answer = _evacuate(client, server_id, {})
    assert (answer.status_code, answer.content) == (202, b"")
    server = mv.wait_status(client, server_id, "ACTIVE")
    dest = server["OS-EXT-SRV-ATTR:host"]
    assert dest != source
    (migration,) = mv.migrations(client, server_id)
    assert (migration["migration_type"], migration["status"]) == ("evacuation", "done")
    assert (migration["source_compute"], migration["dest_compute"]) == (source, dest)
    # The migration holds the failed host as it was; the server the destination, same amounts.
    assert mv.held(client, migration["uuid"]) == before
    after = mv.held(client, server_id)
    assert after == {name.replace(source, dest): held for name, held in before.items()}
    assert mv.usages(client) == mv.total(before, after)
    moved = {group: name.replace(source, dest) for group, name in groups.items()}
    assert mv.binding(client, port_id) == (dest, moved)
    assert server_id in stack.agents[dest].driver.running
    events = mv.events(client, server_id, "evacuate")
    assert [(e["event"], e["result"], e["host"]) for e in events] == [
        ("conductor_rebuild_server", "Success", ""),
        ("compute_rebuild_instance", "Success", dest),
    ]
    mv.assert_clean(stack)

    _comes_back(stack, client, source)
    assert server_id not in stack.agents[source].driver.running
    assert mv.migrations(client, server_id)[0]["status"] == "completed"
    assert w.allocations(client, migration["uuid"]) == {}
    assert mv.usages(client) == after
    mv.assert_clean(stack)


def test_an_sriov_server_gets_a_virtual_function_on_its_destination(
    start_stack: StackFactory,
) -> None:
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
    source = _host_of(client, server_id)
    dest = sorted(set(stack.agents) - {source})[0]
    before = mv.held(client, server_id)
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])

    def vfs() -> list[str]:
        query = (
            sa.select(pci_devices.c.status)
            .where(pci_devices.c.instance_uuid == server_id)
            .order_by(pci_devices.c.compute_node_id)
        )
        with cell_db.read() as conn:
            return [row.status for row in conn.execute(query)]

    _force_down(client, source)
    headers = {"openstack-api-version": "compute 2.29"}
    answer = _evacuate(client, server_id, {"host": dest, "force": True}, headers)
    assert answer.status_code == 202, answer.text
    assert mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == dest
    assert vfs() == ["allocated", "allocated"]  # the failed host's until it comes back
    bound, groups = mv.binding(client, port["id"])
    assert (bound, set(groups.values())) == (dest, {f"{dest}:NIC Switch agent:ens1f0"})
    (migration,) = mv.migrations(client, server_id)
    assert mv.held(client, migration["uuid"]) == before
    mv.assert_clean(stack)

    _comes_back(stack, client, source)
    assert vfs() == ["allocated"]
    assert set(mv.held(client, server_id)) == {dest, f"{dest}:NIC Switch agent:ens1f0"}
    assert source not in "".join(mv.usages(client))
    mv.assert_clean(stack)


def test_an_evacuation_whose_destinations_all_fail_leaves_the_server_on_its_source(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=3)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = _host_of(client, server_id)
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)
    for name, agent in stack.agents.items():
        agent.driver.failures.always = name != source
    _force_down(client, source)

    assert _evacuate(client, server_id, {}).status_code == 202
    mv.wait_migration(client, server_id, "error")
    server = mv.wait_status(client, server_id, "ERROR")
    assert server["OS-EXT-SRV-ATTR:host"] == source
    assert "every spawn on this host fails" in server["fault"]["message"]
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before  # nothing left on either destination tried
    assert mv.binding(client, port_id) == bound_before
    events = mv.events(client, server_id, "evacuate")
    rebuilt = [e for e in events if e["event"] == "compute_rebuild_instance"]
    assert len(rebuilt) == 2 and all(e["result"] == "Error" for e in rebuilt)
    assert {e["host"] for e in rebuilt} == set(stack.agents) - {source}
    assert not any(server_id in a.driver.running for n, a in stack.agents.items() if n != source)
    mv.assert_clean(stack)


def test_an_evacuation_no_host_can_take_leaves_the_server_as_it_was(
    start_stack: StackFactory,
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=1)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = _host_of(client, server_id)
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)
    _force_down(client, source)

    assert _evacuate(client, server_id, {}).status_code == 202
    mv.wait_migration(client, server_id, "error")
    assert mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == source
    assert mv.held(client, server_id) == before
    assert mv.binding(client, port_id) == bound_before
    (event,) = mv.events(client, server_id, "evacuate")
    assert (event["event"], event["result"]) == ("conductor_rebuild_server", "Error")
    assert "No valid host" in event["traceback"]
    # The scheduler's diagnosis is kept with the fault, for admins.
    diagnosis = w.ok(client.get(f"/compute/v2.1/os-berth-diagnosis/{server_id}"))["diagnosis"]
    assert event["traceback"].startswith(diagnosis["fault_message"])
    mv.assert_clean(stack)


def test_evacuations_that_cannot_be_are_refused(start_stack: StackFactory) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    source = w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"]
    other = sorted(set(stack.agents) - {source})[0]
    v2_1 = {"openstack-api-version": "compute 2.1"}

    def refused(argument: Any, headers: dict[str, str], status: int, message: str) -> None:
        answer = _evacuate(client, server_id, argument, headers)
        assert answer.status_code == status, answer.text
        (error,) = answer.json().values()
        assert message in error["message"]

    refused({}, LATEST, 400, f"Compute service of {source} is still in use.")
    _force_down(client, source)
    refused({"host": "nowhere"}, LATEST, 404, "Compute host nowhere not found.")
    refused({"host": source}, LATEST, 400, "can't be the same")
    refused({}, v2_1, 400, "onSharedStorage")
    refused({"onSharedStorage": False}, LATEST, 400, "'onSharedStorage' was unexpected")
    refused(
        {"force": True}, {"openstack-api-version": "compute 2.28"}, 400, "'force' was unexpected"
    )
    refused({"force": True}, LATEST, 400, "Can't force to a non-provided destination")
    shared = {"onSharedStorage": True, "adminPass": "s3cret"}
    refused(shared, v2_1, 400, "admin password can't be changed on existing disk")
    member = {**v2_1, "x-auth-token": "demo:admin", "x-roles": "member"}
    refused({"onSharedStorage": False}, member, 403, "os_compute_api:os-evacuate")
    assert mv.migrations(client, server_id) == []

    answer = _evacuate(client, server_id, {"onSharedStorage": False, "host": other}, v2_1)
    assert answer.status_code == 200, answer.text
    password = answer.json()["adminPass"]
    assert isinstance(password, str) and password
    assert mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == other
    refused({"onSharedStorage": False}, v2_1, 400, f"Compute service of {other} is still in use.")


@pytest.mark.parametrize("given", [None, "s3cret"])
def test_before_2_14_the_answer_is_the_password(
    start_stack: StackFactory, given: str | None
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    flavor, image = w.flavor_and_image(stack)
    server_id = w.boot(client, flavor, image, "none")
    source = w.wait(client, server_id)["OS-EXT-SRV-ATTR:host"]
    _force_down(client, source)
    argument: dict[str, Any] = {"onSharedStorage": False}
    if given is not None:
        argument["adminPass"] = given
    headers = {"openstack-api-version": "compute 2.13"}
    answer = w.ok(_evacuate(client, server_id, argument, headers))
    if given is None:
        assert isinstance(answer["adminPass"], str) and len(answer["adminPass"]) >= 8
    else:
        assert answer["adminPass"] == given
    mv.wait_status(client, server_id, "ACTIVE")
    mv.wait_migration(client, server_id, "done")
    _comes_back(stack, client, source)
    mv.assert_clean(stack)


@pytest.mark.parametrize(
    ("vm_state", "power_state", "status"), [("stopped", 4, "SHUTOFF"), ("error", 0, "ACTIVE")]
)
def test_a_stopped_server_stays_stopped_and_a_failed_one_runs_again(
    start_stack: StackFactory, vm_state: str, power_state: int, status: str
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = _host_of(client, server_id)
    dest = sorted(set(stack.agents) - {source})[0]
    # Berth has no os-stop yet: the server is put in the state as its host would.
    cell_db = stack.compute.cells.database(stack.compute.cells.cells(include_cell0=False)[0])
    with cell_db.write() as conn:
        instances.update(conn, server_id, {"vm_state": vm_state, "power_state": power_state})
    _force_down(client, source)

    assert _evacuate(client, server_id, {}).status_code == 202
    server = mv.wait_status(client, server_id, status)
    assert (server["OS-EXT-SRV-ATTR:host"], server["OS-EXT-STS:vm_state"]) == (
        dest,
        "stopped" if vm_state == "stopped" else "active",
    )
    driver = stack.agents[dest].driver
    assert (server_id in driver.stopped, server_id in driver.running) == (
        vm_state == "stopped",
        vm_state != "stopped",
    )
    assert mv.binding(client, port_id)[0] == dest
    _comes_back(stack, client, source)
    mv.assert_clean(stack)


def test_an_unexpected_error_in_the_conductor_puts_the_server_back(
    start_stack: StackFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack, client = mv.ovs_stack(start_stack, count=2)
    server_id, port_id, _ = mv.qos_server(stack, client)
    source = _host_of(client, server_id)
    before, bound_before = mv.held(client, server_id), mv.binding(client, port_id)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(claims, "bind_first", broken)
    _force_down(client, source)
    assert _evacuate(client, server_id, {}).status_code == 202
    mv.wait_migration(client, server_id, "error")
    assert mv.wait_status(client, server_id, "ACTIVE")["OS-EXT-SRV-ATTR:host"] == source
    assert mv.held(client, server_id) == before
    assert mv.usages(client) == before
    assert mv.binding(client, port_id) == bound_before
    (event,) = mv.events(client, server_id, "evacuate")
    assert "an unexpected error" in event["traceback"]
    mv.assert_clean(stack)

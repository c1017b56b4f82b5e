"""SR-IOV devices in a cell database: syncing a host's description, claiming VFs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from berth.common.db import Database
from berth.compute.db import compute_nodes, pci_devices, services
from tests.unit.compute_db.racing import race

NICS = {
    "ens1f0": {"address": "0000:81:00.0", "physical_network": "physnet1", "vfs": 2},
    "ens1f1": {"address": "0000:81:00.1", "physical_network": "physnet2", "vfs": 1},
}


@pytest.fixture
def node_id(cell_db: Database) -> int:
    with cell_db.write() as conn:
        service = services.get_or_create(conn, "host1", "berth-compute", "compute")
        node = compute_nodes.upsert(conn, service["id"], "host1", "host1", {"vcpus": 8})
        pci_devices.sync_host(conn, node["id"], NICS)
    return int(node["id"])


def _devices(db: Database, node_id: int) -> dict[str, dict[str, Any]]:
    with db.read() as conn:
        return {
            row["address"]: {
                key: row[key]
                for key in ("dev_type", "parent_addr", "dev_name", "physical_network", "status")
            }
            | {"instance": row["instance_uuid"]}
            for row in pci_devices.list_devices(conn, node_id)
        }


def test_vf_addresses_follow_their_pf() -> None:
    assert pci_devices.vf_address("0000:81:00.0", 0) == "0000:81:10.0"
    assert pci_devices.vf_address("0000:81:00.1", 0) == "0000:81:10.1"
    assert pci_devices.vf_address("0000:81:00.0", 3) == "0000:81:13.0"
    assert pci_devices.vf_address("0000:81:00.0", 16) == "0000:82:00.0"


def test_a_host_description_becomes_pf_and_vf_rows(cell_db: Database, node_id: int) -> None:
    devices = _devices(cell_db, node_id)
    assert devices == {
        "0000:81:00.0": {
            "dev_type": "type-PF",
            "parent_addr": None,
            "dev_name": "ens1f0",
            "physical_network": "physnet1",
            "status": "available",
            "instance": None,
        },
        "0000:81:00.1": {
            "dev_type": "type-PF",
            "parent_addr": None,
            "dev_name": "ens1f1",
            "physical_network": "physnet2",
            "status": "available",
            "instance": None,
        },
        "0000:81:10.0": {
            "dev_type": "type-VF",
            "parent_addr": "0000:81:00.0",
            "dev_name": None,
            "physical_network": "physnet1",
            "status": "available",
            "instance": None,
        },
        "0000:81:10.1": {
            "dev_type": "type-VF",
            "parent_addr": "0000:81:00.1",
            "dev_name": None,
            "physical_network": "physnet2",
            "status": "available",
            "instance": None,
        },
        "0000:81:11.0": {
            "dev_type": "type-VF",
            "parent_addr": "0000:81:00.0",
            "dev_name": None,
            "physical_network": "physnet1",
            "status": "available",
            "instance": None,
        },
    }
    with cell_db.read() as conn:
        assert pci_devices.free_vfs(conn, node_id) == {"ens1f0": 2, "ens1f1": 1}
        assert pci_devices.free_vfs(conn, 9999) == {}


def test_syncing_the_same_description_again_changes_nothing(
    cell_db: Database, node_id: int
) -> None:
    before = _devices(cell_db, node_id)
    with cell_db.write() as conn:
        assert pci_devices.sync_host(conn, node_id, NICS) is False
    assert _devices(cell_db, node_id) == before


def test_a_changed_description_updates_adds_and_removes_free_devices(
    cell_db: Database, node_id: int
) -> None:
    changed = {
        "ens1f0": {"address": "0000:81:00.0", "physical_network": "physnet3", "vfs": 3},
        "eth9": {
            "address": "0000:03:00.0",
            "physical_network": None,
            "vf_addresses": ["0000:03:02.0"],
        },
    }
    with cell_db.write() as conn:
        assert pci_devices.sync_host(conn, node_id, changed) is True
        assert pci_devices.free_vfs(conn, node_id) == {"ens1f0": 3, "eth9": 1}
    devices = _devices(cell_db, node_id)
    assert set(devices) == {
        "0000:81:00.0",
        "0000:81:10.0",
        "0000:81:11.0",
        "0000:81:12.0",
        "0000:03:00.0",
        "0000:03:02.0",
    }
    assert devices["0000:81:10.0"]["physical_network"] == "physnet3"
    assert devices["0000:03:02.0"]["parent_addr"] == "0000:03:00.0"


def test_vfs_are_claimed_allocated_and_released(cell_db: Database, node_id: int) -> None:
    with cell_db.write() as conn:
        got = pci_devices.claim_vfs(conn, node_id, "ens1f0", 2, "a" * 36)
        assert got == ["0000:81:10.0", "0000:81:11.0"]
        assert pci_devices.free_vfs(conn, node_id) == {"ens1f0": 0, "ens1f1": 1}
        assert pci_devices.claim_vfs(conn, node_id, "ens1f0", 1, "b" * 36) is None
        assert pci_devices.claim_vfs(conn, node_id, "nope", 1, "b" * 36) is None
        assert pci_devices.allocate(conn, "a" * 36) == 2
        held = pci_devices.held_by(conn, "a" * 36)
        assert [(d["address"], d["status"]) for d in held] == [
            ("0000:81:10.0", "allocated"),
            ("0000:81:11.0", "allocated"),
        ]
        assert pci_devices.release(conn, "a" * 36) == 2
        assert pci_devices.release(conn, "a" * 36) == 0
        assert pci_devices.free_vfs(conn, node_id) == {"ens1f0": 2, "ens1f1": 1}
        assert pci_devices.held_by(conn, "a" * 36) == []


def test_a_claim_short_of_vfs_claims_none(cell_db: Database, node_id: int) -> None:
    with cell_db.write() as conn:
        assert pci_devices.claim_vfs(conn, node_id, "ens1f0", 3, "a" * 36) is None
        assert pci_devices.free_vfs(conn, node_id)["ens1f0"] == 2
        assert pci_devices.held_by(conn, "a" * 36) == []


def test_release_can_be_limited_to_one_node(cell_db: Database, node_id: int) -> None:
    with cell_db.write() as conn:
        service = services.get_or_create(conn, "host2", "berth-compute", "compute")
        other = compute_nodes.upsert(conn, service["id"], "host2", "host2", {"vcpus": 8})["id"]
        pci_devices.sync_host(conn, other, NICS)
        pci_devices.claim_vfs(conn, node_id, "ens1f0", 1, "a" * 36)
        pci_devices.claim_vfs(conn, other, "ens1f0", 1, "a" * 36)
        assert pci_devices.release(conn, "a" * 36, compute_node_id=node_id) == 1
        assert [d["compute_node_id"] for d in pci_devices.held_by(conn, "a" * 36)] == [other]
        assert pci_devices.free_vfs_by_node(conn) == {
            node_id: {"ens1f0": 2, "ens1f1": 1},
            other: {"ens1f0": 1, "ens1f1": 1},
        }


def test_a_held_vf_that_disappears_is_unavailable_until_released(
    cell_db: Database, node_id: int
) -> None:
    fewer = {"ens1f0": {**NICS["ens1f0"], "vfs": 0}, "ens1f1": NICS["ens1f1"]}
    with cell_db.write() as conn:
        pci_devices.claim_vfs(conn, node_id, "ens1f0", 1, "a" * 36)
        pci_devices.sync_host(conn, node_id, fewer)
    devices = _devices(cell_db, node_id)
    assert devices["0000:81:10.0"]["status"] == "unavailable"
    assert devices["0000:81:10.0"]["instance"] == "a" * 36
    assert "0000:81:11.0" not in devices
    with cell_db.write() as conn:
        assert pci_devices.free_vfs(conn, node_id) == {"ens1f0": 0, "ens1f1": 1}
        # It comes back while still held, then goes for good once released.
        pci_devices.sync_host(conn, node_id, NICS)
        assert _status(conn, node_id, "0000:81:10.0") == "allocated"
        pci_devices.sync_host(conn, node_id, fewer)
        assert pci_devices.release(conn, "a" * 36) == 1
    assert "0000:81:10.0" not in _devices(cell_db, node_id)


def _status(conn: Any, node_id: int, address: str) -> str:
    return next(
        d["status"] for d in pci_devices.list_devices(conn, node_id) if d["address"] == address
    )


def test_two_claims_for_the_last_vf_only_one_gets_it(cell_db: Database, node_id: int) -> None:
    """The second claim waits for the first transaction and then finds the VF taken."""
    first_claimed = threading.Event()
    results: dict[str, list[str] | None] = {}

    def first() -> None:
        with cell_db.write() as conn:
            results["first"] = pci_devices.claim_vfs(conn, node_id, "ens1f1", 1, "a" * 36)
            first_claimed.set()
            threading.Event().wait(0.3)

    def second() -> None:
        first_claimed.wait(10)
        with cell_db.write() as conn:
            results["second"] = pci_devices.claim_vfs(conn, node_id, "ens1f1", 1, "b" * 36)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {"first": ["0000:81:10.1"], "second": None}


def test_many_concurrent_claims_never_share_a_vf(cell_db: Database, node_id: int) -> None:
    def claim(n: int) -> list[str] | None:
        return cell_db.write_with_retry(
            lambda conn: pci_devices.claim_vfs(conn, node_id, "ens1f0", 1, f"{n}" * 36)
        )

    results = race(6, claim)
    winners = [result for result in results if result is not None]
    assert sorted(address for result in winners for address in result) == [
        "0000:81:10.0",
        "0000:81:11.0",
    ]
    held = [d for d in _devices(cell_db, node_id).values() if d["instance"] is not None]
    assert len({d["instance"] for d in held}) == 2

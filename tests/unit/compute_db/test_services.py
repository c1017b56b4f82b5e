"""Services and compute nodes in a cell database."""

from __future__ import annotations

import datetime as dt

import pytest

from berth.common.db import Database
from berth.compute.db import compute_nodes, services
from tests.unit.compute_db.racing import race

NOW = dt.datetime(2026, 1, 1, 12, 0, 0)


def test_a_service_registers_once_however_often_it_starts(cell_db: Database) -> None:
    with cell_db.write() as conn:
        first = services.get_or_create(conn, "host1", "berth-compute", "compute")
        again = services.get_or_create(conn, "host1", "berth-compute", "compute")
        other = services.get_or_create(conn, "host1", "berth-conductor", "conductor")
    assert first == again
    assert other["id"] != first["id"]
    assert (first["disabled"], first["forced_down"], first["last_seen_up"]) == (False, False, None)
    with cell_db.read() as conn:
        assert services.get(conn, first["id"]) == first
        assert services.get_by_uuid(conn, first["uuid"]) == first
        assert services.find(conn, "host2", "berth-compute") is None
        assert [s["binary"] for s in services.list_services(conn, host="host1")] == [
            "berth-compute",
            "berth-conductor",
        ]
        assert [s["id"] for s in services.list_services(conn, binary="berth-conductor")] == [
            other["id"]
        ]


def test_two_processes_starting_at_once_share_one_service(cell_db: Database) -> None:
    def start(_: int) -> int:
        return cell_db.write_with_retry(
            lambda conn: services.get_or_create(conn, "host1", "berth-compute", "compute")["id"]
        )

    assert len(set(race(4, start))) == 1


def test_operators_disable_and_force_down_services(cell_db: Database) -> None:
    with cell_db.write() as conn:
        service = services.get_or_create(conn, "host1", "berth-compute", "compute")
        assert services.update(
            conn, service["id"], {"disabled": True, "disabled_reason": "maintenance"}
        )
        assert services.update(conn, 9999, {"disabled": True}) is False
        with pytest.raises(ValueError):
            services.update(conn, service["id"], {"host": "elsewhere"})
        changed = services.get(conn, service["id"])
    assert changed is not None
    assert (changed["disabled"], changed["disabled_reason"]) == (True, "maintenance")


def test_a_service_is_up_while_it_reports_and_is_not_forced_down(cell_db: Database) -> None:
    with cell_db.write() as conn:
        service = services.get_or_create(conn, "host1", "berth-compute", "compute")
        assert not services.is_up(service, NOW, 60)
        assert services.heartbeat(conn, service["id"], NOW, version=3) is True
        assert services.heartbeat(conn, 9999, NOW) is False
        seen = services.get(conn, service["id"])
        assert seen is not None and seen["version"] == 3
        assert services.is_up(seen, NOW + dt.timedelta(seconds=60), 60)
        assert not services.is_up(seen, NOW + dt.timedelta(seconds=61), 60)
        services.update(conn, service["id"], {"forced_down": True})
        forced = services.get(conn, service["id"])
        assert forced is not None and not services.is_up(forced, NOW, 60)


def _service(db: Database, host: str = "host1") -> int:
    with db.write() as conn:
        return int(services.get_or_create(conn, host, "berth-compute", "compute")["id"])


RESOURCES = {"vcpus": 16, "memory_mb": 65536, "local_gb": 1000, "cpu_allocation_ratio": 2.0}


def test_a_node_is_upserted_by_hypervisor_hostname_and_keeps_its_uuid(cell_db: Database) -> None:
    service_id = _service(cell_db)
    with cell_db.write() as conn:
        made = compute_nodes.upsert(conn, service_id, "host1", "host1.example", RESOURCES, "n" * 36)
        grown = compute_nodes.upsert(
            conn, service_id, "host1", "host1.example", {"vcpus": 32}, "other-uuid"
        )
    assert made["uuid"] == grown["uuid"] == "n" * 36
    assert (made["vcpus"], grown["vcpus"], grown["memory_mb"]) == (16, 32, 65536)
    assert (grown["cpu_allocation_ratio"], grown["ram_allocation_ratio"]) == (2.0, 1.0)
    with cell_db.read() as conn:
        assert compute_nodes.get(conn, "n" * 36) == grown
        assert compute_nodes.get_by_id(conn, grown["id"]) == grown
        assert compute_nodes.get_by_hypervisor_hostname(conn, "host1.example") == grown


def test_a_new_node_gets_a_uuid_of_its_own(cell_db: Database) -> None:
    service_id = _service(cell_db)
    with cell_db.write() as conn:
        node = compute_nodes.upsert(conn, service_id, "host1", "host1.example", RESOURCES)
    assert len(node["uuid"]) == 36


def test_nodes_are_listed_by_host_and_their_usage_updated(cell_db: Database) -> None:
    one, two = _service(cell_db, "host1"), _service(cell_db, "host2")
    with cell_db.write() as conn:
        first = compute_nodes.upsert(conn, one, "host1", "host1.example", RESOURCES)
        compute_nodes.upsert(conn, two, "host2", "host2.example", RESOURCES)
        usage = {"vcpus_used": 4, "memory_mb_used": 4096, "local_gb_used": 20, "running_vms": 2}
        assert compute_nodes.update_usage(conn, first["uuid"], usage) is True
        assert compute_nodes.update_usage(conn, "missing", usage) is False
        with pytest.raises(ValueError):
            compute_nodes.update_usage(conn, first["uuid"], {"vcpus": 1})
    with cell_db.read() as conn:
        assert [n["host"] for n in compute_nodes.list_nodes(conn)] == ["host1", "host2"]
        mine = compute_nodes.list_nodes(conn, host="host1")
    assert [n["uuid"] for n in mine] == [first["uuid"]]
    assert {key: mine[0][key] for key in usage} == usage


def test_deleting_a_service_deletes_its_nodes(cell_db: Database) -> None:
    service_id = _service(cell_db)
    with cell_db.write() as conn:
        node = compute_nodes.upsert(conn, service_id, "host1", "host1.example", RESOURCES)
        assert services.delete(conn, service_id) is True
        assert services.delete(conn, service_id) is False
        assert compute_nodes.get(conn, node["uuid"]) is None

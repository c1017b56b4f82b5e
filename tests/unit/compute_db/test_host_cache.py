"""The scheduler's cache of a cell's hosts sees every change by the next request: a node's write,
a node made or deleted, an operator's change to a service, a heartbeat that stopped or came
back, a failed build recorded or aged out, VFs claimed or given back, and whatever else a
HostState is made of; and rebuilds only the HostStates that changed."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.db import compute_nodes, host_changes, instances, pci_devices, services
from berth.compute.scheduler.host_cache import FAILURE_MEMORY, CellHosts, Inputs
from berth.compute.scheduler.host_state import Aggregate, HostState

NOW = dt.datetime(2026, 11, 27, 12, 0, 0)
RESOURCES = {"vcpus": 8, "memory_mb": 16384, "local_gb": 100}
NOTHING = Inputs(aggregates={}, servers={})
NICS = {"ens1f0": {"address": "0000:81:00.0", "physical_network": "physnet1", "vfs": 2}}


@pytest.fixture(params=["hook", "no hook"])
def db(cell_db: Database, request: pytest.FixtureRequest) -> Iterator[Database]:
    """The cell database as the services open it (changes logged at commit by the write hook),
    and as a tool does (logged at each write)."""
    if request.param == "no hook":
        yield cell_db
        return
    hooked = Database(cell_db.url, write_hooks=[host_changes.HostChanges()])
    yield hooked
    hooked.dispose()


def _host(db: Database, name: str, seen: dt.datetime | None = NOW) -> str:
    with db.write() as conn:
        service = services.get_or_create(conn, name, "nova-compute", "compute")
        if seen is not None:
            services.heartbeat(conn, service["id"], seen)
        return str(compute_nodes.upsert(conn, service["id"], name, name, RESOURCES)["uuid"])


def _states(
    db: Database, cache: CellHosts, now: dt.datetime = NOW, inputs: Inputs = NOTHING
) -> dict[str, HostState]:
    return {s.host: s for s in cache.states(db, now, _every, inputs)}


class _Every:
    def __contains__(self, item: Any) -> bool:
        return True


_every: Any = _Every()


def _service_id(db: Database, host: str) -> int:
    with db.read() as conn:
        found = services.find(conn, host, "nova-compute")
        assert found is not None
        return int(found["id"])


def test_the_next_request_sees_every_change(db: Database) -> None:
    a, b = _host(db, "a"), _host(db, "b")
    cache = CellHosts("cell", "nova", down_time=60)
    first = _states(db, cache)
    assert sorted(first) == ["a", "b"] and first["a"].free_ram_mb == 16384
    assert _states(db, cache) == first
    # A node's usage.
    with db.write() as conn:
        compute_nodes.update_usage(conn, a, {"memory_mb_used": 2048})
    assert _states(db, cache)["a"].free_ram_mb == 14336
    # An operator disables b's service, then forces it down.
    with db.write() as conn:
        services.update(conn, _service_id(db, "b"), {"disabled": True})
    assert _states(db, cache)["b"].disabled
    with db.write() as conn:
        services.update(conn, _service_id(db, "b"), {"forced_down": True})
    assert not _states(db, cache)["b"].up
    # A node made, and one deleted.
    _host(db, "c")
    assert sorted(_states(db, cache)) == ["a", "b", "c"]
    with db.write() as conn:
        compute_nodes.delete(conn, b)
    assert sorted(_states(db, cache)) == ["a", "c"]
    # A service deleted takes its node along (a cascade, no write of the node's own).
    with db.write() as conn:
        services.delete(conn, _service_id(db, "c"))
    assert sorted(_states(db, cache)) == ["a"]


def test_a_heartbeat_is_followed_by_time(db: Database) -> None:
    _host(db, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    assert _states(db, cache)["a"].up
    later = NOW + dt.timedelta(seconds=61)
    assert not _states(db, cache, later)["a"].up
    # It reports again: up at the next request, though nothing but the heartbeat was written.
    with db.write() as conn:
        services.heartbeat(conn, _service_id(db, "a"), later)
    assert _states(db, cache, later)["a"].up
    # A heartbeat before the service would have been down changes nothing seen.
    with db.write() as conn:
        services.heartbeat(conn, _service_id(db, "a"), later + dt.timedelta(seconds=30))
    assert _states(db, cache, later + dt.timedelta(seconds=90))["a"].up


def test_a_service_that_never_reported_is_down_until_it_does(db: Database) -> None:
    _host(db, "a", seen=None)
    cache = CellHosts("cell", "nova", down_time=60)
    assert not _states(db, cache)["a"].up
    with db.write() as conn:
        services.heartbeat(conn, _service_id(db, "a"), NOW)
    assert _states(db, cache)["a"].up


def test_the_rest_of_a_state_comes_from_the_request(db: Database) -> None:
    _host(db, "a"), _host(db, "b")
    cache = CellHosts("cell", "nova", down_time=60)
    zone = Aggregate("agg", "agg", {"availability_zone": "az1"})
    inputs = Inputs(aggregates={"a": (zone,)}, servers={"a": frozenset({"s"})})
    before = _states(db, cache)
    state = _states(db, cache, inputs=inputs)["a"]
    assert state.availability_zone == "az1" and state.instances == {"s"}
    assert _states(db, cache, inputs=inputs)["b"] is before["b"]
    assert _states(db, cache)["a"] == _states(db, CellHosts("cell", "nova", 60))["a"]


def test_a_failed_build_counts_from_the_next_request_until_it_ages_out(db: Database) -> None:
    _host(db, "a"), _host(db, "b")
    cache = CellHosts("cell", "nova", down_time=600_000)
    before = _states(db, cache)
    assert before["a"].failed_builds == 0
    now = utcnow()
    with db.write() as conn:
        instances.add_fault(conn, "i1", 500, "Build failed", host="a")
        # A fault against no host (a scheduling failure) is no host's failure.
        instances.add_fault(conn, "i2", 500, "No valid host")
    seen = _states(db, cache, now)
    assert seen["a"].failed_builds == 1 and seen["b"] is before["b"]
    assert _states(db, cache, now + FAILURE_MEMORY)["a"].failed_builds == 1
    aged = _states(db, cache, now + FAILURE_MEMORY + dt.timedelta(seconds=5))
    assert aged["a"].failed_builds == 0
    # A server's copy purged from the cell takes its faults along.
    with db.write() as conn:
        instances.add_fault(conn, "i3", 500, "Build failed", host="b")
    assert _states(db, cache, now)["b"].failed_builds == 1
    with db.write() as conn:
        instances.purge(conn, "i3")
    assert _states(db, cache, now)["b"].failed_builds == 0


def test_vfs_claimed_or_given_back_are_seen_by_the_next_request(db: Database) -> None:
    _host(db, "a"), _host(db, "b")
    node = _node_id(db, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    assert _states(db, cache)["a"].free_vfs == {}
    with db.write() as conn:
        pci_devices.sync_host(conn, node, NICS)
    before = _states(db, cache)
    assert before["a"].free_vfs == {"ens1f0": 2}
    with db.write() as conn:
        assert pci_devices.claim_vfs(conn, node, "ens1f0", 1, "i1") is not None
    claimed = _states(db, cache)
    assert claimed["a"].free_vfs == {"ens1f0": 1} and claimed["b"] is before["b"]
    # Claimed, then allocated: as unavailable to others.
    with db.write() as conn:
        pci_devices.allocate(conn, "i1", node)
    assert _states(db, cache)["a"] is claimed["a"]
    with db.write() as conn:
        pci_devices.release(conn, "i1")
    assert _states(db, cache)["a"].free_vfs == {"ens1f0": 2}
    with db.write() as conn:
        held = pci_devices.claim_vfs(conn, node, "ens1f0", 2, "i2")
        assert held is not None
    assert _states(db, cache)["a"].free_vfs == {"ens1f0": 0}
    with db.write() as conn:
        pci_devices.release_vfs(conn, node, "i2", held[:1])
    assert _states(db, cache)["a"].free_vfs == {"ens1f0": 1}
    with db.write() as conn:
        pci_devices.release(conn, "i2", node)
    assert _states(db, cache)["a"].free_vfs == {"ens1f0": 2}
    # The host's devices described away: its VFs are gone too.
    with db.write() as conn:
        pci_devices.sync_host(conn, node, {})
    assert _states(db, cache)["a"].free_vfs == {}


def test_a_write_rolled_back_is_not_seen(db: Database) -> None:
    a = _host(db, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    before = _states(db, cache)
    with pytest.raises(RuntimeError), db.write() as conn:
        compute_nodes.update_usage(conn, a, {"memory_mb_used": 2048})
        raise RuntimeError
    assert _states(db, cache)["a"] is before["a"]


def test_a_fresh_cache_and_a_kept_one_agree(db: Database) -> None:
    """After every kind of change, the kept states are what a cache that never saw the cell
    before reads."""
    a, _ = _host(db, "a"), _host(db, "b")
    kept = CellHosts("cell", "nova", down_time=60)
    changes = [
        lambda conn: compute_nodes.update_usage(conn, a, {"vcpus_used": 3}),
        lambda conn: services.update(conn, _service_id(db, "b"), {"disabled": True}),
        lambda conn: pci_devices.sync_host(conn, _node_id(db, "b"), NICS),
        lambda conn: pci_devices.claim_vfs(conn, _node_id(db, "b"), "ens1f0", 1, "i1"),
        lambda conn: instances.add_fault(conn, "i1", 500, "failed", host="b"),
        lambda conn: compute_nodes.upsert(conn, _service_id(db, "a"), "a", "a2", RESOURCES),
        lambda conn: services.update(conn, _service_id(db, "b"), {"forced_down": True}),
        lambda conn: compute_nodes.delete(conn, a),
    ]
    now = utcnow()
    for change in changes:
        with db.write() as conn:
            change(conn)
        fresh = CellHosts("cell", "nova", down_time=60)
        assert _listed(db, kept, now) == _listed(db, fresh, now)


def _listed(db: Database, cache: CellHosts, now: dt.datetime) -> list[HostState]:
    return cache.states(db, now, _every, NOTHING)


def _node_id(db: Database, host: str) -> int:
    with db.read() as conn:
        return int(compute_nodes.list_nodes(conn, host)[0]["id"])


def test_the_touches_of_a_write_rolled_back_are_not_taken_for_a_later_one(
    cell_db: Database,
) -> None:
    hooked = Database(cell_db.url, write_hooks=[host_changes.HostChanges()], pool_size=1)
    a = _host(hooked, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    _states(hooked, cache)
    with pytest.raises(RuntimeError), hooked.write() as conn:
        compute_nodes.update_usage(conn, a, {"memory_mb_used": 2048})
        raise RuntimeError
    # A tool's transaction on the same pooled connection, outside the hook's: logged at once.
    with hooked.engine.begin() as conn:
        compute_nodes.update_usage(conn, a, {"memory_mb_used": 1024})
    assert _states(hooked, cache)["a"].free_ram_mb == 16384 - 1024
    hooked.dispose()

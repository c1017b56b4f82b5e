"""The scheduler's cache of a cell's hosts sees every change by the next request: a node's write,
a node made or deleted, an operator's change to a service, a heartbeat that stopped or came
back, and whatever else a HostState is made of."""

from __future__ import annotations

import datetime as dt
from typing import Any

from berth.common.db import Database
from berth.compute.db import compute_nodes, services
from berth.compute.scheduler.host_cache import CellHosts, Inputs
from berth.compute.scheduler.host_state import Aggregate, HostState

NOW = dt.datetime(2026, 11, 27, 12, 0, 0)
RESOURCES = {"vcpus": 8, "memory_mb": 16384, "local_gb": 100}
NOTHING = Inputs(aggregates={}, failures={}, free_vfs={}, servers={})


def _host(db: Database, name: str, seen: dt.datetime | None = NOW) -> str:
    with db.write() as conn:
        service = services.get_or_create(conn, name, "nova-compute", "compute")
        if seen is not None:
            services.heartbeat(conn, service["id"], seen)
        return str(compute_nodes.upsert(conn, service["id"], name, name, RESOURCES)["uuid"])


def _states(
    db: Database, cache: CellHosts, now: dt.datetime = NOW, inputs: Inputs = NOTHING
) -> dict[str, HostState]:
    with db.read() as conn:
        return {s.host: s for s in cache.states(conn, now, _every, inputs)}


class _Every:
    def __contains__(self, item: Any) -> bool:
        return True


_every: Any = _Every()


def _service_id(db: Database, host: str) -> int:
    with db.read() as conn:
        found = services.find(conn, host, "nova-compute")
        assert found is not None
        return int(found["id"])


def test_the_next_request_sees_every_change(cell_db: Database) -> None:
    a, b = _host(cell_db, "a"), _host(cell_db, "b")
    cache = CellHosts("cell", "nova", down_time=60)
    first = _states(cell_db, cache)
    assert sorted(first) == ["a", "b"] and first["a"].free_ram_mb == 16384
    assert _states(cell_db, cache) == first
    # A node's usage.
    with cell_db.write() as conn:
        compute_nodes.update_usage(conn, a, {"memory_mb_used": 2048})
    assert _states(cell_db, cache)["a"].free_ram_mb == 14336
    # An operator disables b's service, then forces it down.
    with cell_db.write() as conn:
        services.update(conn, _service_id(cell_db, "b"), {"disabled": True})
    assert _states(cell_db, cache)["b"].disabled
    with cell_db.write() as conn:
        services.update(conn, _service_id(cell_db, "b"), {"forced_down": True})
    assert not _states(cell_db, cache)["b"].up
    # A node made, and one deleted.
    _host(cell_db, "c")
    assert sorted(_states(cell_db, cache)) == ["a", "b", "c"]
    with cell_db.write() as conn:
        compute_nodes.delete(conn, b)
    assert sorted(_states(cell_db, cache)) == ["a", "c"]
    # A service deleted takes its node along (a cascade, no write of the node's own).
    with cell_db.write() as conn:
        services.delete(conn, _service_id(cell_db, "c"))
    assert sorted(_states(cell_db, cache)) == ["a"]


def test_a_heartbeat_is_followed_by_time(cell_db: Database) -> None:
    _host(cell_db, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    assert _states(cell_db, cache)["a"].up
    later = NOW + dt.timedelta(seconds=61)
    assert not _states(cell_db, cache, later)["a"].up
    # It reports again: up at the next request, though nothing but the heartbeat was written.
    with cell_db.write() as conn:
        services.heartbeat(conn, _service_id(cell_db, "a"), later)
    assert _states(cell_db, cache, later)["a"].up
    # A heartbeat before the service would have been down changes nothing seen.
    with cell_db.write() as conn:
        services.heartbeat(conn, _service_id(cell_db, "a"), later + dt.timedelta(seconds=30))
    assert _states(cell_db, cache, later + dt.timedelta(seconds=90))["a"].up


def test_a_service_that_never_reported_is_down_until_it_does(cell_db: Database) -> None:
    _host(cell_db, "a", seen=None)
    cache = CellHosts("cell", "nova", down_time=60)
    assert not _states(cell_db, cache)["a"].up
    with cell_db.write() as conn:
        services.heartbeat(conn, _service_id(cell_db, "a"), NOW)
    assert _states(cell_db, cache)["a"].up


def test_the_rest_of_a_state_comes_from_the_request(cell_db: Database) -> None:
    _host(cell_db, "a")
    cache = CellHosts("cell", "nova", down_time=60)
    zone = Aggregate("agg", "agg", {"availability_zone": "az1"})
    inputs = Inputs(
        aggregates={"a": (zone,)}, failures={"a": 2}, free_vfs={}, servers={"a": frozenset({"s"})}
    )
    state = _states(cell_db, cache, inputs=inputs)["a"]
    assert state.availability_zone == "az1" and state.failed_builds == 2
    assert state.instances == {"s"}
    assert _states(cell_db, cache)["a"] == _states(cell_db, CellHosts("cell", "nova", 60))["a"]

"""bench/boot_floor: the hops a boot makes are counted by kind, and the floor is their cost."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from bench import boot_floor
from berth.bus.runtime import BusRuntime
from berth.common.context import RequestContext
from berth.common.db import Database
from berth.common.inprocess import InProcessTransport
from berth.compute.clients.http import in_process_client


class _Echo:
    def echo(self, value: int) -> int:
        return value


def test_each_hop_is_counted_by_kind(tmp_path: Path) -> None:
    app = boot_floor._NothingApp()
    caller = RequestContext(user_id="u", project_id="p")
    database = Database(f"sqlite:///{tmp_path / 'hops.db'}")
    with database.write() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    runtime = BusRuntime()
    runtime.serve("memory://hops", "echo", _Echo(), concurrency=1)
    bus = runtime.client("memory://hops")
    hops = boot_floor.Hops()
    try:
        with (
            httpx.Client(transport=InProcessTransport(app), base_url="http://a") as client,
            in_process_client(app, caller, "http://a", inline=True) as service,
            hops.counted(),
        ):
            client.post("/", json={})
            for _ in range(3):
                assert service.get("/").json() == {}
            assert bus.call("echo", "echo", value=7) == 7
            bus.cast("echo", "echo", value=8)
            bus.cast("echo", "echo", value=9)
            with database.write() as conn:
                conn.exec_driver_sql("INSERT INTO t (id) VALUES (1)")
            for _ in range(2):
                with database.read() as conn:
                    assert conn.scalar(sa.text("SELECT count(*) FROM t")) == 1
        # Counting stops on leaving.
        bus.cast("echo", "echo", value=10)
        with database.read() as conn:
            conn.scalar(sa.text("SELECT 1"))
    finally:
        runtime.stop_serving(grace=1)
        runtime.close()
        database.dispose()
    assert hops.counts == {
        "client requests": 1,
        "in-process calls": 3,
        "bus calls": 1,
        "bus casts": 2,
        "write transactions": 1,
        "read transactions": 2,
    }


def test_the_floor_is_each_hop_per_boot_times_its_cost() -> None:
    costs = boot_floor.hop_costs(count=40)
    assert set(costs) == set(boot_floor.HOPS)
    assert all(cost > 0 for cost in costs.values())
    per_boot = dict.fromkeys(boot_floor.HOPS, 0.0) | {"bus casts": 2.0, "read transactions": 3.0}
    floor = boot_floor.Floor(per_boot, costs)
    assert floor.cpu == pytest.approx(2 * costs["bus casts"] + 3 * costs["read transactions"])
    # 10 boots in 2 s on 0.5 s of CPU: a quarter of a core busy.
    lines = floor.lines(boots=10, cpu=0.5, spent=2.0)
    assert f"{0.25 / floor.cpu:.0f} boots/s at this run's 0.25 cores busy" in lines[1]
    assert "50.0 ms per boot, 5.0/s" in lines[2]

"""The floor of a boot in the all-in-one process: what its hops alone cost on this machine.

A boot crosses the stack's plumbing a number of times that the design fixes, whatever each
service then does: a client's request to the Compute API (from the client's thread through the
shared event loop to a handler thread), one service's request to another's API (in the caller's
thread, ``inline``), messages on the in-process bus (casts and calls) and SQLite transactions
(writes and reads). ``Hops`` counts each while the real boots run (every hop of the process,
the watcher's listings and the hosts' heartbeats included, as boot_bench's CPU per server
includes them); ``hop_costs`` then times each
hop made by do-nothing pieces on the same machinery (an ASGI app that reads the body, hops to its
handler threads and answers ``{}``; a bus endpoint that returns ``None``; a transaction of one
``INSERT`` or one ``SELECT`` on a SQLite file with the stack's settings), in this process, after
the boots, one thread at a time. The floor is the boots' hops per boot times each hop's CPU: what
a boot would cost here if every service did nothing but pass it on. Run alone it is a lower
bound: it leaves out the routing, authentication, validation and rendering every real request
needs, and contention between threads.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from berth.bus.memory import InMemoryBus
from berth.bus.runtime import BusRuntime
from berth.common import db as dbs
from berth.common.asgi import HandlerThreads
from berth.common.context import RequestContext
from berth.common.inprocess import InProcessTransport
from berth.compute.clients.http import in_process_client

Message = dict[str, Any]

# Each hop by its name in the printed line, in that order.
HOPS = (
    "client requests",
    "in-process calls",
    "bus casts",
    "bus calls",
    "write transactions",
    "read transactions",
)
_BUS = "memory://boot-floor"
_TOPIC = "floor"


class Hops:
    """Counts every hop of this process while it is entered (``with hops.counted(): ...``)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, hop: str) -> None:
        with self._lock:
            self.counts[hop] += 1

    @contextmanager
    def counted(self) -> Iterator[None]:
        answer, cast, call = InProcessTransport.answer, InMemoryBus.cast, InMemoryBus.call

        def counted_answer(transport: InProcessTransport, *args: Any, **kwargs: Any) -> Any:
            self.add("in-process calls" if transport.inline else "client requests")
            return answer(transport, *args, **kwargs)

        async def counted_cast(bus: InMemoryBus, *args: Any, **kwargs: Any) -> None:
            self.add("bus casts")
            await cast(bus, *args, **kwargs)

        async def counted_call(bus: InMemoryBus, *args: Any, **kwargs: Any) -> Any:
            self.add("bus calls")
            return await call(bus, *args, **kwargs)

        def on_begin(conn: Connection) -> None:
            write = conn.get_execution_options().get(dbs._IMMEDIATE, False)
            self.add("write transactions" if write else "read transactions")

        InProcessTransport.answer = counted_answer  # type: ignore[method-assign]
        InMemoryBus.cast = counted_cast  # type: ignore[method-assign]
        InMemoryBus.call = counted_call  # type: ignore[method-assign]
        event.listen(Engine, "begin", on_begin)
        try:
            yield
        finally:
            event.remove(Engine, "begin", on_begin)
            InProcessTransport.answer = answer  # type: ignore[method-assign]
            InMemoryBus.cast = cast  # type: ignore[method-assign]
            InMemoryBus.call = call  # type: ignore[method-assign]


class _NothingApp:
    """An ASGI app that reads the request's body, runs nothing on one of its handler threads
    (inline when its caller asked for that, as every Berth app does) and answers ``{}``."""

    def __init__(self) -> None:
        self._threads = HandlerThreads("floor")

    async def __call__(
        self,
        scope: Message,
        receive: Callable[[], Awaitable[Message]],
        send: Callable[[Message], Awaitable[None]],
    ) -> None:
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await self._threads.run(_nothing)
        headers = [(b"content-type", b"application/json"), (b"content-length", b"2")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})


def _nothing() -> None:
    return None


class _NothingEndpoint:
    """A bus endpoint whose one method does nothing, counting the casts it served."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served = 0
        self._expected = 0
        self._all_served = threading.Event()

    def nothing(self) -> None:
        with self._lock:
            self._served += 1
            if self._served == self._expected:
                self._all_served.set()

    def expect(self, count: int) -> None:
        with self._lock:
            self._served, self._expected = 0, count
            self._all_served.clear()

    def wait(self) -> None:
        if not self._all_served.wait(60):
            raise RuntimeError(f"the floor's endpoint served {self._served} of {self._expected}")


def _cpu_per(count: int, work: Callable[[], None]) -> float:
    """Seconds of this process's CPU (every thread) per ``count`` runs of ``work``."""
    start = time.process_time()
    work()
    return (time.process_time() - start) / count


def hop_costs(count: int = 2000) -> dict[str, float]:
    """CPU seconds of each hop, made ``count`` times by do-nothing pieces (after a warm-up)."""
    app = _NothingApp()
    body = {"server": {"name": "floor", "flavorRef": "1", "imageRef": "x"}}
    caller = RequestContext(user_id="floor", project_id="floor", roles=("admin",))
    costs: dict[str, float] = {}
    with (
        httpx.Client(transport=InProcessTransport(app), base_url="http://floor") as client,
        in_process_client(app, caller, "http://floor", inline=True) as service,
    ):
        for name, http in (("client requests", client), ("in-process calls", service)):
            for _ in range(count // 10):
                http.post("/", json=body)

            def requests(http: httpx.Client = http) -> None:
                for _ in range(count):
                    http.post("/", json=body)

            costs[name] = _cpu_per(count, requests)

    runtime = BusRuntime()
    endpoint = _NothingEndpoint()
    try:
        runtime.serve(_BUS, _TOPIC, endpoint, concurrency=8)
        bus = runtime.client(_BUS)

        def casts() -> None:
            endpoint.expect(count)
            for _ in range(count):
                bus.cast(_TOPIC, "nothing")
            endpoint.wait()

        def calls() -> None:
            for _ in range(count):
                bus.call(_TOPIC, "nothing")

        for name, work in (("bus casts", casts), ("bus calls", calls)):
            work()
            costs[name] = _cpu_per(count, work)
    finally:
        runtime.stop_serving(grace=1)
        runtime.close()

    with tempfile.TemporaryDirectory() as tmp:
        database = dbs.Database(f"sqlite:///{Path(tmp) / 'floor.db'}")
        rows = sa.table("rows", sa.column("id", sa.Integer), sa.column("value", sa.String))
        with database.write() as conn:
            conn.exec_driver_sql("CREATE TABLE rows (id INTEGER PRIMARY KEY, value TEXT)")
        ids = iter(range(1, 10 * count))
        # Built once, as the stack's hot statements are.
        insert = sa.insert(rows).values(id=sa.bindparam("id"), value=sa.bindparam("value"))
        select = sa.select(rows.c.value).where(rows.c.id == sa.bindparam("id"))

        def writes() -> None:
            for _ in range(count):
                with database.write() as conn:
                    conn.execute(insert, {"id": next(ids), "value": "floor"})

        def reads() -> None:
            for n in range(count):
                with database.read() as conn:
                    conn.execute(select, {"id": n + 1}).first()

        for name, work in (("write transactions", writes), ("read transactions", reads)):
            work()
            costs[name] = _cpu_per(count, work)
        database.dispose()
    return costs


@dataclass(frozen=True)
class Floor:
    per_boot: dict[str, float]  # hops of each kind per boot
    costs: dict[str, float]  # CPU seconds per hop

    @property
    def cpu(self) -> float:
        """CPU seconds per boot of the hops alone."""
        return sum(self.per_boot[hop] * self.costs[hop] for hop in HOPS)

    def lines(self, boots: int, cpu: float, spent: float) -> list[str]:
        """What to print, against the real run's ``boots`` made in ``spent`` seconds on ``cpu``
        seconds of this process's CPU."""
        hops = ", ".join(
            f"{self.per_boot[hop]:.1f} {hop} ({self.costs[hop] * 1e6:.0f} µs)" for hop in HOPS
        )
        cores = cpu / spent
        real = cpu / boots
        floor_rate = cores / self.cpu
        return [
            f"floor (the hops alone, do-nothing pieces; per boot, CPU per hop): {hops}",
            f"  = {self.cpu * 1000:.1f} ms of CPU per boot: {floor_rate:.0f} boots/s at this "
            f"run's {cores:.2f} cores busy ({1 / self.cpu:.0f}/s on one core)",
            f"  the boots: {real * 1000:.1f} ms per boot, {boots / spent:.1f}/s, "
            f"{100 * self.cpu / real:.0f} % of it the floor's hops (machine: nproc "
            f"{os.cpu_count()})",
        ]


def measure(hops: Hops, boots: int) -> Floor:
    """The floor from ``hops`` counted over ``boots`` boots, its hops timed here and now."""
    per_boot = {hop: hops.counts[hop] / boots for hop in HOPS}
    return Floor(per_boot, hop_costs())

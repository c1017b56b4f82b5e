"""The evacuation's three messages cross the bus typed: evacuate_server (super-conductor),
evacuate_failed (cell conductor), evacuate_instance (compute host)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from berth.bus.runtime import BusRuntime
from berth.compute.objects.build import BuildAttempt
from berth.compute.wiring import Wiring
from tests.unit.compute.test_rpc import CELL, selection


class Received:
    """A receiver of the evacuation's messages; remembers what arrived, typed."""

    def __init__(self) -> None:
        self.received: list[tuple[str, tuple[Any, ...]]] = []
        self.arrived = threading.Event()

    def _note(self, method: str, *args: Any) -> None:
        self.received.append((method, args))
        self.arrived.set()

    def evacuate_server(self, *args: Any) -> None:
        self._note("evacuate_server", *args)

    def evacuate_failed(self, *args: Any) -> None:
        self._note("evacuate_failed", *args)

    def evacuate_instance(self, *args: Any) -> None:
        self._note("evacuate_instance", *args)


@pytest.fixture
def wiring() -> Iterator[Wiring]:
    runtime = BusRuntime()
    yield Wiring(runtime, "memory://", rpc_timeout=2.0)
    runtime.close()


@pytest.mark.parametrize("host", [None, "h2"])
def test_an_evacuation_reaches_the_super_conductor(wiring: Wiring, host: str | None) -> None:
    conductor = Received()
    wiring.serve_super_conductor(conductor)  # type: ignore[arg-type]
    wiring.super_conductor().evacuate_server("inst-0", host, "req-1")
    assert conductor.arrived.wait(2)
    assert conductor.received == [("evacuate_server", ("inst-0", host, "req-1"))]


def test_a_rebuild_and_its_failure_reach_the_host_and_the_cell_conductor(wiring: Wiring) -> None:
    conductor, host = Received(), Received()
    wiring.serve_cell_conductor(CELL, conductor)  # type: ignore[arg-type]
    wiring.serve_host(CELL, "h1", host)  # type: ignore[arg-type]
    alternates, attempts = [selection("h2")], [BuildAttempt("h0", "spawn failed")]
    wiring.cells().host(CELL, "h1").evacuate_instance("inst-0", "mig-1", alternates, attempts)
    wiring.cells().conductor(CELL).evacuate_failed(
        "inst-0", "mig-1", "h1", "boom", alternates, attempts
    )
    assert host.arrived.wait(2) and conductor.arrived.wait(2)
    assert host.received == [("evacuate_instance", ("inst-0", "mig-1", alternates, attempts))]
    assert conductor.received == [
        ("evacuate_failed", ("inst-0", "mig-1", "h1", "boom", alternates, attempts))
    ]

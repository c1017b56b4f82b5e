"""attach_interface and detach_interface over a real (in-process) bus: calls, their answers and
refusals as values, a silent host as ServiceUnreachable."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from berth.bus.runtime import BusRuntime
from berth.compute import rpc
from berth.compute.cells import Cell
from berth.compute.objects.build import PortEntry
from berth.compute.wiring import Wiring

CELL = Cell(
    1, "c0ffee00-0000-4000-8000-000000000002", "cell1", "sqlite://", "memory://cell1", False
)
ENTRY = PortEntry("port1", "net1", "fa:16:3e:00:00:01", ({"ip_address": "10.0.0.5"},))


class Host:
    def __init__(self, refusal: Exception | None = None) -> None:
        self.refusal = refusal
        self.received: list[tuple[str, tuple[Any, ...]]] = []
        self.release = threading.Event()
        self.release.set()

    def attach_interface(self, *args: Any) -> PortEntry:
        self.received.append(("attach_interface", args))
        self.release.wait(5)
        if self.refusal is not None:
            raise self.refusal
        return ENTRY

    def detach_interface(self, *args: Any) -> None:
        self.received.append(("detach_interface", args))
        if self.refusal is not None:
            raise self.refusal


@pytest.fixture
def wiring() -> Iterator[Wiring]:
    runtime = BusRuntime()
    yield Wiring(runtime, "memory://", rpc_timeout=2.0)
    runtime.close()


def test_an_attach_answers_the_port_entry(wiring: Wiring) -> None:
    host = Host()
    wiring.serve_host(CELL, "h1", host)  # type: ignore[arg-type]
    client = wiring.cells().host(CELL, "h1")
    assert client.attach_interface("inst", None, "net1", "10.0.0.5") == ENTRY
    client.detach_interface("inst", "port1")
    assert host.received == [
        ("attach_interface", ("inst", None, "net1", "10.0.0.5")),
        ("detach_interface", ("inst", "port1")),
    ]


def test_a_refusal_arrives_with_its_status(wiring: Wiring) -> None:
    wiring.serve_host(CELL, "h1", Host(rpc.InterfaceRefused(409, "Port port1 is still in use.")))  # type: ignore[arg-type]
    client = wiring.cells().host(CELL, "h1")
    with pytest.raises(rpc.InterfaceRefused) as refused:
        client.attach_interface("inst", "port1", None, None)
    assert (refused.value.status, refused.value.message) == (409, "Port port1 is still in use.")
    with pytest.raises(rpc.InterfaceRefused):
        client.detach_interface("inst", "port1")


def test_a_silent_or_absent_host_is_unreachable(wiring: Wiring) -> None:
    with pytest.raises(rpc.ServiceUnreachable, match="not running"):
        wiring.cells().host(CELL, "h1").attach_interface("inst", "port1", None, None)
    host = Host()
    host.release.clear()
    wiring.serve_host(CELL, "h1", host)  # type: ignore[arg-type]
    wiring.rpc_timeout = 0.2
    with pytest.raises(
        rpc.ServiceUnreachable, match=r"did not answer attach_interface within 0\.2 s"
    ):
        wiring.cells().host(CELL, "h1").attach_interface("inst", "port1", None, None)
    host.release.set()

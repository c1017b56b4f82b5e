"""The guest's messages over a real (in-process) bus: rescue and unrescue as casts, the password
and the console as calls whose refusal arrives as a GuestRefused."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from berth.bus.runtime import BusRuntime
from berth.compute import rpc
from berth.compute.wiring import Wiring
from tests.unit.compute.test_interface_rpc import CELL


class Guests:
    def __init__(self, refusal: Exception | None = None) -> None:
        self.refusal = refusal
        self.received: list[tuple[str, tuple[Any, ...]]] = []

    def rescue_instance(self, *args: Any) -> None:
        self.received.append(("rescue_instance", args))

    def unrescue_instance(self, *args: Any) -> None:
        self.received.append(("unrescue_instance", args))

    def set_admin_password(self, *args: Any) -> None:
        self.received.append(("set_admin_password", args))
        if self.refusal is not None:
            raise self.refusal

    def get_console_output(self, instance_uuid: str) -> str:
        return f"console of {instance_uuid}\nlogin:"


@pytest.fixture
def wiring() -> Iterator[Wiring]:
    runtime = BusRuntime()
    yield Wiring(runtime, "memory://", rpc_timeout=2.0)
    runtime.close()


def test_each_message_arrives_typed(wiring: Wiring) -> None:
    host = Guests()
    wiring.serve_host(CELL, "h1", host)  # type: ignore[arg-type]
    client = wiring.cells().host(CELL, "h1")
    assert client.get_console_output("inst") == "console of inst\nlogin:"
    client.set_admin_password("inst", "pw")
    client.rescue_instance("inst", "img", "rescue-pw")
    client.unrescue_instance("inst")
    deadline = time.monotonic() + 5
    while len(host.received) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert host.received == [
        ("set_admin_password", ("inst", "pw")),
        ("rescue_instance", ("inst", "img", "rescue-pw")),
        ("unrescue_instance", ("inst",)),
    ]


def test_a_guest_that_cannot_take_the_password_is_a_refusal(wiring: Wiring) -> None:
    wiring.serve_host(CELL, "h1", Guests(rpc.GuestRefused(409, "not running")))  # type: ignore[arg-type]
    with pytest.raises(rpc.GuestRefused) as refused:
        wiring.cells().host(CELL, "h1").set_admin_password("inst", "pw")
    assert (refused.value.status, refused.value.message) == (409, "not running")


def test_an_absent_host_is_unreachable(wiring: Wiring) -> None:
    with pytest.raises(rpc.ServiceUnreachable, match="not running"):
        wiring.cells().host(CELL, "h1").get_console_output("inst")

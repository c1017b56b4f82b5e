"""The blocking ``BusClient``, for threads other than the bus's event loop."""

from __future__ import annotations

import asyncio

import pytest

from berth.bus import BusClient, BusClosed, CallTimeout, InMemoryBus, RemoteError
from tests.unit.bus.conftest import NewBus
from tests.unit.bus.endpoints import Gate, Recorder, ThreadedRelay


async def test_a_worker_thread_casts_calls_and_fans_out(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve("conductor", recorder)
        client = BusClient(bus)

        def in_a_thread() -> object:
            client.cast("conductor", "note", n=1)
            client.fanout("conductor", "note", n=2)
            return client.call("conductor", "echo", hosts=["host1"])

        assert await asyncio.to_thread(in_a_thread) == {"hosts": ["host1"]}
        await recorder.received.reach(2)
        # A fan-out and a cast travel apart: no order between them.
        assert sorted(entry["n"] for entry in recorder.received.entries) == [1, 2]


async def test_errors_reach_the_calling_thread(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        gate = Gate()
        bus.serve("conductor", Recorder())
        bus.serve("scheduler", gate)
        client = BusClient(bus)
        with pytest.raises(TypeError, match="hosts is a set"):
            await asyncio.to_thread(client.cast, "conductor", "note", hosts={"host1"})
        with pytest.raises(RemoteError, match="FlavorNotFound"):
            await asyncio.to_thread(client.call, "conductor", "fail", flavor="m1.tiny")
        with pytest.raises(CallTimeout):
            await asyncio.to_thread(client.call, "scheduler", "hold", timeout=0.05, item=1)
        gate.opened.set()


async def test_a_plain_method_calls_on_through_a_client(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", ThreadedRelay(BusClient(bus), to="scheduler"))
        bus.serve("scheduler", Recorder())
        assert await bus.call("conductor", "forward", item=7) == {"item": 7}


async def test_a_client_refuses_to_block_its_own_loop(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Recorder())
        with pytest.raises(RuntimeError, match="await the bus"):
            BusClient(bus).cast("conductor", "note")


def test_a_client_of_a_closed_loop_says_the_bus_is_closed() -> None:
    loop = asyncio.new_event_loop()
    loop.close()
    with pytest.raises(BusClosed):
        BusClient(InMemoryBus(), loop).cast("conductor", "note")

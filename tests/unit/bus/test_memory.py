"""What the in-process bus does beyond the promises every bus keeps (those are in test_bus.py)."""

from __future__ import annotations

import asyncio

import pytest

from berth.bus import CallTimeout, InMemoryBus, NoServer
from tests.unit.bus.endpoints import Gate, Recorder


async def test_a_call_given_up_before_it_started_is_not_served() -> None:
    async with InMemoryBus() as bus:
        gate = Gate()
        bus.serve("scheduler", gate)
        await bus.cast("scheduler", "hold", item="busy")
        await gate.started.reach(1)
        with pytest.raises(CallTimeout):
            await bus.call("scheduler", "hold", timeout=0.01, item="given up")
        gate.opened.set()
        assert await bus.call("scheduler", "hold", item="next") == "next"
        assert gate.started.entries == ["busy", "next"]


async def test_a_call_after_the_last_server_stopped_fails_at_once() -> None:
    async with InMemoryBus() as bus:
        server = bus.serve("scheduler", Recorder())
        assert await bus.call("scheduler", "whoami") == "recorder"
        await server.stop()
        with pytest.raises(NoServer):
            await bus.call("scheduler", "whoami")


async def test_a_stopped_server_finishes_what_it_took_and_leaves_the_rest_queued() -> None:
    async with InMemoryBus() as bus:
        gate = Gate()
        server = bus.serve("compute.host1", gate)
        await bus.cast("compute.host1", "hold", item=1)
        await bus.cast("compute.host1", "hold", item=2)
        await gate.started.reach(1)
        stopping = asyncio.create_task(server.stop())
        gate.opened.set()
        await stopping
        assert gate.finished.entries == [1]
        successor = Gate(gate.opened)
        bus.serve("compute.host1", successor)
        await successor.finished.reach(1)
        assert successor.finished.entries == [2]


async def test_servers_of_one_topic_take_strict_turns() -> None:
    async with InMemoryBus() as bus:
        bus.serve("scheduler", Recorder("a"))
        bus.serve("scheduler", Recorder("b"))
        answers = [await bus.call("scheduler", "whoami") for _ in range(6)]
        assert answers == ["a", "b"] * 3


async def test_a_busy_server_leaves_the_next_message_to_an_idle_one() -> None:
    async with InMemoryBus() as bus:
        busy, idle = Gate(), Recorder("idle")
        bus.serve("scheduler", busy)
        await bus.cast("scheduler", "hold", item="long")
        await busy.started.reach(1)
        bus.serve("scheduler", idle)
        for n in range(3):
            await bus.cast("scheduler", "note", n=n)
        await idle.received.reach(3)
        assert busy.started.entries == ["long"]
        busy.opened.set()


async def test_a_server_that_stops_drops_its_fanout_copies_not_yet_run() -> None:
    async with InMemoryBus() as bus:
        gate = Gate()
        server = bus.serve("compute", gate)
        await bus.cast("compute", "hold", item="build")
        await gate.started.reach(1)
        await bus.fanout("compute", "hold", item="refresh")
        stopping = asyncio.create_task(server.stop())
        gate.opened.set()
        await stopping
        successor = Gate(gate.opened)
        bus.serve("compute", successor)
        await bus.cast("compute", "hold", item="next")
        await successor.finished.reach(1)
        assert (gate.finished.entries, successor.finished.entries) == (["build"], ["next"])

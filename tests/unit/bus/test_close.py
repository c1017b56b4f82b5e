"""Closing a bus: work in flight finishes, new work is refused, nobody waits forever.

The first tests hold for every backend; the in-process bus's own closing follows.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from berth.bus import BusClosed, InMemoryBus
from tests.unit.bus.conftest import NewBus
from tests.unit.bus.endpoints import Gate, Recorder, Relay


async def test_close_lets_running_work_finish(new_bus: NewBus) -> None:
    bus = new_bus()
    gate = Gate()
    bus.serve("compute.host1", gate)
    await bus.cast("compute.host1", "hold", item=0)
    await gate.started.reach(1)
    closing = asyncio.create_task(bus.close())
    await asyncio.sleep(0.05)
    assert not closing.done()
    gate.opened.set()
    await closing
    assert gate.finished.entries == [0]


async def test_a_closing_bus_refuses_new_work_from_outside(new_bus: NewBus) -> None:
    bus = new_bus()
    gate = Gate()
    bus.serve("compute.host1", gate)
    await bus.cast("compute.host1", "hold", item=0)
    await gate.started.reach(1)
    closing = asyncio.create_task(bus.close())
    await asyncio.sleep(0)
    with pytest.raises(BusClosed):
        await bus.cast("compute.host1", "hold", item=1)
    with pytest.raises(BusClosed):
        await bus.fanout("compute.host1", "hold", item=1)
    with pytest.raises(BusClosed):
        await bus.call("compute.host1", "hold", item=1)
    with pytest.raises(BusClosed):
        bus.serve("conductor", Recorder())
    gate.opened.set()
    await closing
    assert gate.finished.entries == [0]
    with pytest.raises(BusClosed):
        await bus.cast("compute.host1", "hold", item=2)


async def test_closing_twice_waits_for_the_first(new_bus: NewBus) -> None:
    bus = new_bus()
    gate = Gate()
    bus.serve("scheduler", gate)
    await bus.cast("scheduler", "hold", item=1)
    await gate.started.reach(1)
    first = asyncio.create_task(bus.close())
    second = asyncio.create_task(bus.close())
    await asyncio.sleep(0)
    assert not second.done()
    gate.opened.set()
    await asyncio.gather(first, second)
    assert gate.finished.entries == [1]


async def test_a_bus_never_used_closes(new_bus: NewBus) -> None:
    await new_bus().close()


# --- the in-process bus ---


async def test_close_lets_queued_work_finish_too() -> None:
    bus = InMemoryBus()
    gate = Gate()
    bus.serve("compute.host1", gate)
    for n in range(3):
        await bus.cast("compute.host1", "hold", item=n)
    await gate.started.reach(1)
    closing = asyncio.create_task(bus.close())
    await asyncio.sleep(0)
    assert not closing.done()
    gate.opened.set()
    await closing
    assert gate.finished.entries == [0, 1, 2]


async def test_a_closing_bus_serves_what_its_own_handlers_send() -> None:
    bus = InMemoryBus()
    relay = Relay(bus, to="compute.host1")
    recorder = Recorder()
    bus.serve("conductor", relay)
    bus.serve("compute.host1", recorder)
    await bus.cast("conductor", "forward", item="build")
    await relay.started.reach(1)
    closing = asyncio.create_task(bus.close())
    await asyncio.sleep(0)
    # The relay casts on only now, while the bus is closing; the cast is part of work in flight.
    relay.opened.set()
    await closing
    assert recorder.received.entries == [{"item": "build"}]


async def test_close_gives_up_after_its_timeout(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="berth.bus")
    bus = InMemoryBus()
    gate = Gate()
    bus.serve("scheduler", gate)
    waiting = asyncio.create_task(bus.call("scheduler", "hold", item="stuck"))
    await gate.started.reach(1)
    await bus.cast("compute.nowhere", "note")
    await bus.close(timeout=0.01)
    with pytest.raises(BusClosed):
        await waiting
    assert gate.finished.entries == []
    messages = [record.getMessage() for record in caplog.records]
    assert any("not done after 0.01s" in message for message in messages)
    assert any("never served: compute.nowhere: 1" in message for message in messages)

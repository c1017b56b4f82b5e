"""What every bus promises (the ``Bus`` interface), on every backend (see conftest's ``new_bus``).

What only one backend does is tested in test_memory.py and test_rabbit.py.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time

import pytest

from berth.bus import BusError, CallTimeout, NoServer, NoSuchMethod, RemoteError
from berth.bus.message import MAX_TOPIC_BYTES
from tests.unit.bus.conftest import NewBus
from tests.unit.bus.endpoints import Gate, Recorder, Relay

# --- cast ---


async def test_casts_from_one_sender_are_served_in_the_order_sent(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve("conductor", recorder)
        # Early messages yield longest: only one-at-a-time serving keeps them in order.
        for n in range(20):
            await bus.cast("conductor", "note_after", n=n, turns=20 - n)
        await recorder.received.reach(20)
        assert recorder.received.entries == list(range(20))


async def test_cast_returns_without_waiting_for_the_method(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        gate = Gate()
        bus.serve("compute.host1", gate)
        assert await bus.cast("compute.host1", "hold", item="build") is None
        await gate.started.reach(1)
        assert gate.finished.entries == []
        gate.opened.set()


async def test_a_cast_before_any_server_waits_for_one(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        for n in range(3):
            await bus.cast("compute.host1", "note", n=n)
        recorder = Recorder()
        bus.serve("compute.host1", recorder)
        await recorder.received.reach(3)
        assert recorder.received.entries == [{"n": 0}, {"n": 1}, {"n": 2}]


async def test_the_server_gets_its_own_copy_of_the_arguments(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve("conductor", recorder)
        spec = {"flavor": "m1.small", "hosts": ("host1", "host2")}
        await bus.cast("conductor", "note", spec=spec)
        spec["flavor"] = "changed after the cast"
        await recorder.received.reach(1)
        # Tuples arrive as lists, as they would through JSON.
        assert recorder.received.entries == [
            {"spec": {"flavor": "m1.small", "hosts": ["host1", "host2"]}}
        ]


async def test_a_failing_cast_is_logged_and_the_server_goes_on(
    new_bus: NewBus, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="berth.bus")
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve("conductor", recorder)
        await bus.cast("conductor", "fail", flavor="m1.tiny")
        await bus.cast("conductor", "missing")
        # One server, one message at a time: once this returns, both casts were served.
        assert await bus.call("conductor", "whoami") == "recorder"
    failed, missing = [r for r in caplog.records if r.name.startswith("berth.bus")]
    assert failed.getMessage() == "cast 'fail' to 'conductor' failed"
    assert failed.exc_info is not None
    assert str(failed.exc_info[1]) == "flavor m1.tiny not found"
    assert "no public method 'missing'" in missing.getMessage()


# --- call ---


async def test_call_returns_the_reply(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("scheduler", Recorder())
        reply = await bus.call("scheduler", "echo", spec={"vcpus": 2}, hosts=("a", "b"))
        assert reply == {"spec": {"vcpus": 2}, "hosts": ["a", "b"]}


async def test_call_and_cast_pass_topic_and_method_as_arguments_too(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("scheduler", Recorder())
        reply = await bus.call("scheduler", "echo", topic="t", method="m")
        assert reply == {"topic": "t", "method": "m"}


async def test_call_times_out(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        gate = Gate()
        bus.serve("scheduler", gate)
        started = time.monotonic()
        with pytest.raises(CallTimeout) as caught:
            await bus.call("scheduler", "hold", timeout=0.05, item=1)
        assert time.monotonic() - started < 1
        assert (caught.value.topic, caught.value.method, caught.value.timeout) == (
            "scheduler",
            "hold",
            0.05,
        )
        gate.opened.set()


async def test_call_timeout_must_be_positive(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("scheduler", Recorder())
        with pytest.raises(ValueError, match="positive"):
            await bus.call("scheduler", "whoami", timeout=0)


async def test_a_call_without_timeout_uses_the_bus_default(new_bus: NewBus) -> None:
    async with new_bus(call_timeout=0.05) as bus:
        gate = Gate()
        bus.serve("scheduler", gate)
        with pytest.raises(CallTimeout) as caught:
            await bus.call("scheduler", "hold", item=1)
        assert caught.value.timeout == 0.05
        gate.opened.set()


async def test_a_remote_error_keeps_the_type_name_and_message(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Recorder())
        with pytest.raises(RemoteError) as caught:
            await bus.call("conductor", "fail", flavor="m1.tiny")
        assert caught.value.exc_type == "FlavorNotFound"
        assert caught.value.message == "flavor m1.tiny not found"
        assert str(caught.value) == "FlavorNotFound: flavor m1.tiny not found"
        assert isinstance(caught.value, BusError)


async def test_a_remote_error_keeps_its_type_across_two_hops(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Relay(bus, to="scheduler"))
        bus.serve("scheduler", Recorder())
        with pytest.raises(RemoteError) as caught:
            await bus.call("conductor", "ask", flavor="m1.tiny")
        assert (caught.value.exc_type, caught.value.message) == (
            "FlavorNotFound",
            "flavor m1.tiny not found",
        )


async def test_wrong_arguments_come_back_as_a_remote_type_error(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Recorder())
        with pytest.raises(RemoteError) as caught:
            await bus.call("conductor", "fail", flavour="m1.tiny")
        assert caught.value.exc_type == "TypeError"


async def test_a_reply_that_is_not_json_is_a_remote_type_error(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Recorder())
        with pytest.raises(RemoteError) as caught:
            await bus.call("conductor", "bad_reply")
        assert caught.value.exc_type == "TypeError"
        assert "set" in caught.value.message


@pytest.mark.parametrize("method", ["missing", "_private", "not_a_method", "__init__"])
async def test_only_public_methods_can_be_called(new_bus: NewBus, method: str) -> None:
    async with new_bus() as bus:
        bus.serve("conductor", Recorder())
        with pytest.raises(NoSuchMethod) as caught:
            await bus.call("conductor", method)
        assert caught.value.method == method


async def test_plain_methods_run_in_a_worker_thread(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("compute.host1", Recorder())
        assert await bus.call("compute.host1", "thread_of") != threading.get_ident()


# --- no server ---


async def test_a_call_nobody_serves_fails_at_once(new_bus: NewBus) -> None:
    async with new_bus(call_timeout=30) as bus:
        started = time.monotonic()
        with pytest.raises(NoServer) as caught:
            await bus.call("scheduler", "select_destinations")
        assert caught.value.topic == "scheduler"
        # Far below the bus's timeout, though a broker's first call opens its connections.
        assert time.monotonic() - started < 5


async def test_messages_sent_after_the_last_server_stopped_wait_for_the_next(
    new_bus: NewBus,
) -> None:
    async with new_bus() as bus:
        server = bus.serve("compute.host1", Recorder("first"))
        assert server.topic == "compute.host1"
        assert await bus.call("compute.host1", "whoami") == "first"
        await server.stop()
        await bus.cast("compute.host1", "note", n=1)
        successor = Recorder("successor")
        bus.serve("compute.host1", successor)
        await successor.received.reach(1)
        assert successor.received.entries == [{"n": 1}]


async def test_a_stopping_server_finishes_what_it_is_running(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        gate = Gate()
        server = bus.serve("compute.host1", gate)
        await bus.cast("compute.host1", "hold", item=1)
        await gate.started.reach(1)
        stopping = asyncio.create_task(server.stop())
        await asyncio.sleep(0.05)
        assert not stopping.done()
        gate.opened.set()
        await stopping
        assert gate.finished.entries == [1]


# --- fan-out ---


async def test_a_fanout_reaches_every_server_of_the_topic_once(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        recorders = [Recorder(name) for name in "abc"]
        for recorder in recorders:
            bus.serve("compute", recorder)
        await bus.fanout("compute", "note", refresh="aggregates")
        for recorder in recorders:
            await recorder.received.reach(1)
        # A cast to the same topic still reaches one of them.
        await bus.cast("compute", "note", build="server1")
        await asyncio.sleep(0.1)
        received = [entry for recorder in recorders for entry in recorder.received.entries]
        assert sorted(map(str, received)) == sorted(
            [str({"refresh": "aggregates"})] * 3 + [str({"build": "server1"})]
        )


async def test_a_fanout_nobody_serves_is_dropped(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        await bus.fanout("compute", "note", refresh="aggregates")
        recorder = Recorder()
        bus.serve("compute", recorder)
        await bus.fanout("compute", "note", refresh="flavors")
        await recorder.received.reach(1)
        await asyncio.sleep(0.1)
        assert recorder.received.entries == [{"refresh": "flavors"}]


async def test_a_server_runs_its_fanout_copy_within_its_concurrency(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        gate = Gate()
        bus.serve("compute", gate)
        await bus.cast("compute", "hold", item="build")
        await gate.started.reach(1)
        await bus.fanout("compute", "hold", item="refresh")
        await asyncio.sleep(0.1)
        assert gate.started.entries == ["build"]
        gate.opened.set()
        await gate.finished.reach(2)
        assert gate.finished.entries == ["build", "refresh"]


async def test_a_fanout_with_what_json_cannot_carry_fails_at_the_sender(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        with pytest.raises(TypeError, match="hosts is a set"):
            await bus.fanout("compute", "note", hosts={"host1"})


# --- several servers, several messages at a time ---


async def test_servers_of_one_topic_take_turns(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        bus.serve("scheduler", Recorder("a"))
        bus.serve("scheduler", Recorder("b"))
        answers = [await bus.call("scheduler", "whoami") for _ in range(6)]
        assert (answers.count("a"), answers.count("b")) == (3, 3)


async def test_servers_of_one_topic_share_its_messages(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        opened = asyncio.Event()
        first, second = Gate(opened), Gate(opened)
        bus.serve("scheduler", first)
        bus.serve("scheduler", second)
        for n in range(4):
            await bus.cast("scheduler", "hold", item=n)
        # Both hold a message at once: with one consumer the second would never start.
        await first.started.reach(1)
        await second.started.reach(1)
        opened.set()
        await first.finished.reach(2)
        await second.finished.reach(2)
        assert sorted(first.finished.entries + second.finished.entries) == [0, 1, 2, 3]


async def test_a_server_takes_as_many_messages_at_once_as_its_concurrency(
    new_bus: NewBus,
) -> None:
    async with new_bus() as bus:
        gate = Gate()
        bus.serve("compute.host1", gate, concurrency=2)
        for n in range(3):
            await bus.cast("compute.host1", "hold", item=n)
        await gate.started.reach(2)
        # The third waits for a free worker.
        await asyncio.sleep(0.05)
        assert gate.started.entries == [0, 1]
        gate.opened.set()
        await gate.finished.reach(3)


async def test_concurrency_is_at_least_one(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        with pytest.raises(ValueError):
            bus.serve("compute.host1", Recorder(), concurrency=0)


# --- topics and loops ---


@pytest.mark.parametrize("topic", ["", "compute host1", "x" * (MAX_TOPIC_BYTES + 1)])
async def test_a_topic_a_broker_could_not_route_is_refused(new_bus: NewBus, topic: str) -> None:
    async with new_bus() as bus:
        with pytest.raises(ValueError):
            await bus.cast(topic, "note")
        with pytest.raises(ValueError):
            await bus.fanout(topic, "note")
        with pytest.raises(ValueError):
            bus.serve(topic, Recorder())


async def test_the_longest_topic_works(new_bus: NewBus) -> None:
    topic = "x" * MAX_TOPIC_BYTES
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve(topic, recorder)
        assert await bus.call(topic, "whoami") == "recorder"
        await bus.fanout(topic, "note", n=1)
        await recorder.received.reach(1)


async def test_a_bus_belongs_to_one_event_loop(new_bus: NewBus) -> None:
    bus = new_bus()
    bus.serve("conductor", Recorder())

    def elsewhere() -> None:
        asyncio.run(bus.cast("conductor", "note"))

    with pytest.raises(RuntimeError, match="another event loop"):
        await asyncio.to_thread(elsewhere)
    await bus.close()

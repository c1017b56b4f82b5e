"""What the RabbitMQ bus does beyond the promises every bus keeps (those are in test_bus.py).

Several buses on one namespace stand for several processes. The tests that drop connections from
the broker's side need ``rabbitmqctl`` for a broker on this machine.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

import berth.bus.rabbit
from berth.bus import Bus, BusClosed, BusUnavailable, CallTimeout, NoServer, RabbitURL, RemoteError
from berth.bus.oslo import HEARTBEAT_SECONDS, Names
from berth.bus.rabbit import RabbitBus, RabbitServer
from tests.unit.bus.broker import connection, delete_namespace
from tests.unit.bus.conftest import NewBus
from tests.unit.bus.endpoints import Gate, Recorder, Relay


@asynccontextmanager
async def processes(new_bus: NewBus, count: int) -> AsyncIterator[list[Bus]]:
    """``count`` buses on one namespace, closed side by side (each close takes a second)."""
    buses = [new_bus() for _ in range(count)]
    try:
        yield buses
    finally:
        await asyncio.gather(*(bus.close() for bus in buses))


# --- several processes ---


async def test_servers_in_two_processes_share_a_topic(new_rabbit_bus: NewBus) -> None:
    async with processes(new_rabbit_bus, 3) as (first, second, caller):
        recorders = [Recorder("first"), Recorder("second")]
        for bus, recorder in zip((first, second), recorders, strict=True):
            bus.serve("scheduler", recorder)
            # A bus's own messages wait until its servers listen.
            await bus.call("scheduler", "whoami")
        answers = {await caller.call("scheduler", "whoami") for _ in range(6)}
        assert answers == {"first", "second"}
        await caller.fanout("scheduler", "note", refresh="aggregates")
        for recorder in recorders:
            await recorder.received.reach(1)
            assert recorder.received.entries == [{"refresh": "aggregates"}]


async def test_casts_wait_in_the_broker_for_a_server_in_another_process(
    new_rabbit_bus: NewBus,
) -> None:
    sender = new_rabbit_bus()
    for n in range(3):
        await sender.cast("compute.host1", "note", n=n)
    await sender.close()
    async with new_rabbit_bus() as receiver:
        recorder = Recorder()
        receiver.serve("compute.host1", recorder)
        await recorder.received.reach(3)
        assert recorder.received.entries == [{"n": 0}, {"n": 1}, {"n": 2}]


async def test_a_closing_bus_sends_what_its_handlers_send(new_rabbit_bus: NewBus) -> None:
    async with new_rabbit_bus() as host:
        recorder = Recorder()
        host.serve("compute.host1", recorder)
        await host.call("compute.host1", "whoami")
        conductor = new_rabbit_bus()
        relay = Relay(conductor, to="compute.host1")
        conductor.serve("conductor", relay)
        await conductor.cast("conductor", "forward", item="build")
        await relay.started.reach(1)
        closing = asyncio.create_task(conductor.close())
        await asyncio.sleep(0)
        # The relay casts on only now, while its bus is closing: the cast still goes out.
        relay.opened.set()
        await closing
        await recorder.received.reach(1)
        assert recorder.received.entries == [{"item": "build"}]


# --- what a server takes ---


async def test_a_call_after_the_last_server_stopped_waits_for_the_next(
    new_rabbit_bus: NewBus,
) -> None:
    async with new_rabbit_bus() as bus:
        server = bus.serve("scheduler", Recorder("first"))
        assert await bus.call("scheduler", "whoami") == "first"
        await server.stop()
        # The topic's queue outlives its servers: no NoServer, the call waits in it.
        waiting = asyncio.create_task(bus.call("scheduler", "whoami", timeout=5))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        bus.serve("scheduler", Recorder("next"))
        assert await waiting == "next"


async def test_a_stopping_server_serves_every_message_the_broker_gave_it(
    new_rabbit_bus: NewBus,
) -> None:
    async with new_rabbit_bus() as bus:
        gate = Gate()
        server = bus.serve("compute.host1", gate)
        await bus.cast("compute.host1", "hold", item=1)
        await bus.cast("compute.host1", "hold", item=2)
        await gate.started.reach(1)
        # oslo takes the second message from the broker at once, though its thread is busy.
        await asyncio.sleep(0.2)
        stopping = asyncio.create_task(server.stop())
        gate.opened.set()
        await stopping
        assert gate.finished.entries == [1, 2]


async def test_a_call_given_up_on_is_still_served_once_taken(new_rabbit_bus: NewBus) -> None:
    async with new_rabbit_bus() as bus:
        gate = Gate()
        bus.serve("scheduler", gate)
        await bus.cast("scheduler", "hold", item="busy")
        await gate.started.reach(1)
        with pytest.raises(CallTimeout):
            await bus.call("scheduler", "hold", timeout=0.05, item="given up")
        gate.opened.set()
        assert await bus.call("scheduler", "hold", item="next") == "next"
        assert gate.started.entries == ["busy", "given up", "next"]


class StopsItself:
    def __init__(self) -> None:
        self.server: RabbitServer | None = None

    async def stop(self) -> None:
        assert self.server is not None
        await self.server.stop()


async def test_a_handler_cannot_wait_for_its_own_server_to_stop(new_rabbit_bus: NewBus) -> None:
    async with new_rabbit_bus() as bus:
        assert isinstance(bus, RabbitBus)
        endpoint = StopsItself()
        endpoint.server = bus.serve("scheduler", endpoint)
        with pytest.raises(RemoteError) as caught:
            await bus.call("scheduler", "stop")
        assert (caught.value.exc_type, caught.value.message) == (
            "RuntimeError",
            "a handler cannot wait for its own server to stop",
        )


# --- closing ---


async def test_close_gives_up_after_its_timeout(
    new_rabbit_bus: NewBus, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="berth.bus")
    bus = new_rabbit_bus()
    gate = Gate()
    bus.serve("scheduler", gate)
    waiting = asyncio.create_task(bus.call("scheduler", "hold", item="stuck"))
    await gate.started.reach(1)
    await bus.close(timeout=0.3)
    with pytest.raises(BusClosed):
        await waiting
    # The handler was cancelled, not finished.
    assert gate.finished.entries == []
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("berth.bus")]
    assert any("not done after 0.3s; cancelling it" in message for message in messages)


# --- the broker ---


async def test_a_namespace_is_a_bus_of_its_own(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    elsewhere = f"berth-t-{uuid.uuid4().hex[:12]}"
    try:
        async with new_rabbit_bus() as bus, RabbitBus(rabbit_url, namespace=elsewhere) as other:
            assert isinstance(bus, RabbitBus)
            bus.serve("scheduler", Recorder())
            await bus.call("scheduler", "whoami")
            with connection(rabbit_url) as broker:
                queue = broker.default_channel.queue_declare(
                    Names(bus.namespace).topic("scheduler"), passive=True
                )
            assert queue.consumer_count == 1
            with pytest.raises(NoServer):
                await other.call("scheduler", "whoami")
    finally:
        delete_namespace(rabbit_url, elsewhere, set())


async def test_an_unreachable_broker_fails_a_cast(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without retries: the bus's own are some ten seconds.
    monkeypatch.setattr(berth.bus.rabbit, "SEND_RETRIES", 0)
    nowhere = RabbitURL("127.0.0.1", 1, "guest", "guest")
    async with RabbitBus(nowhere, namespace="berth-t-nowhere") as bus:
        with pytest.raises(BusUnavailable, match="cast to 'scheduler' failed"):
            await bus.cast("scheduler", "note")


@pytest.mark.parametrize("namespace", ["", "berth test", "x" * 23])
def test_a_namespace_fits_into_queue_names(namespace: str) -> None:
    with pytest.raises(ValueError, match="a bus namespace is 1 to 22"):
        RabbitBus(RabbitURL("broker.invalid"), namespace=namespace)


def rabbitmqctl(*args: str) -> str:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"rabbitmqctl {args[0]} failed: {done.stderr.strip()}")
    return done.stdout


def my_connections() -> list[tuple[str, int]]:
    """This process's connections to the broker: their broker-side ids and heartbeat timeouts."""
    # oslo names each connection "<program>:<pid>:<uuid>".
    mine = f":{os.getpid()}:"
    lines = rabbitmqctl("list_connections", "pid", "timeout", "client_properties").splitlines()
    return [
        (pid, int(timeout))
        for pid, timeout, properties in (line.split("\t", 2) for line in lines[1:])
        if mine in properties
    ]


async def test_the_bus_keeps_its_connections_alive_and_gets_them_back(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    if shutil.which("rabbitmqctl") is None or rabbit_url.host not in ("127.0.0.1", "localhost"):
        pytest.skip("needs rabbitmqctl for a broker on this machine")
    async with new_rabbit_bus() as bus:
        recorder = Recorder()
        bus.serve("scheduler", recorder)
        assert await bus.call("scheduler", "whoami") == "recorder"
        connections = await asyncio.to_thread(my_connections)
        # One to send, one for replies, one for the server; each with heartbeats.
        assert len(connections) >= 3
        assert {timeout for _, timeout in connections} == {HEARTBEAT_SECONDS}
        for pid, _ in connections:
            await asyncio.to_thread(rabbitmqctl, "close_connection", pid, "berth test")
        assert await bus.call("scheduler", "whoami", timeout=20) == "recorder"
        await bus.cast("scheduler", "note", n=1)
        await recorder.received.reach(1)


# --- one listening connection for every topic ---

TOPICS = [f"compute.host{n}" for n in range(8)]


def needs_rabbitmqctl(url: RabbitURL) -> None:
    if shutil.which("rabbitmqctl") is None or url.host not in ("127.0.0.1", "localhost"):
        pytest.skip("needs rabbitmqctl for a broker on this machine")


def queue_counts(url: RabbitURL, bus: Bus, topic: str) -> tuple[int, int]:
    """The messages waiting in ``topic``'s queue, and its consumers."""
    assert isinstance(bus, RabbitBus)
    with connection(url) as broker:
        queue = broker.default_channel.queue_declare(
            Names(bus.namespace).topic(topic), passive=True
        )
    return queue.message_count, queue.consumer_count


def consuming_connections(namespace: str) -> dict[str, int]:
    """The broker's connections consuming from ``namespace``'s queues, each with its count."""
    channels = rabbitmqctl("list_channels", "pid", "connection").splitlines()[1:]
    connection_of = dict(line.split("\t") for line in channels)
    consumers = rabbitmqctl("list_consumers", "queue_name", "channel_pid").splitlines()[1:]
    found: dict[str, int] = {}
    for queue_name, channel in (line.split("\t") for line in consumers):
        if queue_name.startswith(f"{namespace}."):
            where = connection_of[channel]
            found[where] = found.get(where, 0) + 1
    return found


async def test_the_topics_of_a_bus_share_one_listening_connection(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    needs_rabbitmqctl(rabbit_url)
    async with new_rabbit_bus() as bus:
        assert isinstance(bus, RabbitBus)
        recorders = {topic: Recorder(topic) for topic in TOPICS}
        for topic, recorder in recorders.items():
            bus.serve(topic, recorder)
        for topic in TOPICS:
            assert await bus.call(topic, "whoami") == topic
            await bus.cast(topic, "note", to=topic)
        # Per topic its queue, its ".shared" queue and its fan-out queue: all on one connection,
        # this process's, beside the few it sends and takes replies on.
        consuming = await asyncio.to_thread(consuming_connections, bus.namespace)
        assert list(consuming.values()) == [3 * len(TOPICS)]
        mine = await asyncio.to_thread(my_connections)
        assert set(consuming) <= {pid for pid, _ in mine}
        assert len(mine) < len(TOPICS)
        # Each topic still has a queue of its own, and hears only what was sent to it.
        for topic, recorder in recorders.items():
            await recorder.received.reach(1)
            assert recorder.received.entries == [{"to": topic}]
            assert queue_counts(rabbit_url, bus, topic) == (0, 1)


async def test_a_busy_topic_does_not_hold_up_another(new_rabbit_bus: NewBus) -> None:
    async with new_rabbit_bus() as bus:
        gate = Gate()
        bus.serve("compute.host1", gate)
        bus.serve("compute.host2", Recorder("host2"))
        await bus.cast("compute.host1", "hold", item=1)
        await bus.cast("compute.host1", "hold", item=2)
        await gate.started.reach(1)
        # host1's one thread is busy and its second message waits for it; host2 answers.
        assert await bus.call("compute.host2", "whoami", timeout=5) == "host2"
        assert gate.started.entries == [1]
        gate.opened.set()
        await gate.finished.reach(2)


async def test_a_stopped_topic_stops_while_the_others_go_on(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    async with new_rabbit_bus() as bus:
        gate = Gate()
        stopping = bus.serve("compute.host1", gate)
        others = {topic: Recorder(topic) for topic in ("compute.host2", "compute.host3")}
        for topic, recorder in others.items():
            bus.serve(topic, recorder)
        await bus.cast("compute.host1", "hold", item="in flight")
        await gate.started.reach(1)
        stopped = asyncio.create_task(stopping.stop())
        # Its work in flight holds up its own stop, not the other topics.
        for topic in others:
            assert await bus.call(topic, "whoami", timeout=5) == topic
        assert not stopped.done()
        gate.opened.set()
        await stopped
        assert gate.finished.entries == ["in flight"]
        await bus.cast("compute.host1", "hold", item="queued")
        assert queue_counts(rabbit_url, bus, "compute.host1") == (1, 0)
        for topic in others:
            assert await bus.call(topic, "whoami") == topic
        successor = Gate()
        successor.opened.set()
        bus.serve("compute.host1", successor)
        await successor.finished.reach(1)
        assert successor.finished.entries == ["queued"]


async def test_every_topic_comes_back_after_the_broker_drops_the_connections(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    needs_rabbitmqctl(rabbit_url)
    async with new_rabbit_bus() as bus:
        recorders = {topic: Recorder(topic) for topic in TOPICS}
        for topic, recorder in recorders.items():
            bus.serve(topic, recorder)
        for topic in TOPICS:
            assert await bus.call(topic, "whoami") == topic
        for pid, _ in await asyncio.to_thread(my_connections):
            await asyncio.to_thread(rabbitmqctl, "close_connection", pid, "berth test")
        for topic in TOPICS:
            assert await bus.call(topic, "whoami", timeout=20) == topic
            await bus.fanout(topic, "note", to=topic)
        for topic, recorder in recorders.items():
            await recorder.received.reach(1)
            assert recorder.received.entries == [{"to": topic}]


async def test_a_topic_leaves_the_broker_with_its_last_server_here(
    new_rabbit_bus: NewBus, rabbit_url: RabbitURL
) -> None:
    needs_rabbitmqctl(rabbit_url)
    async with new_rabbit_bus() as bus:
        assert isinstance(bus, RabbitBus)
        first = bus.serve("compute", Recorder("first"))
        second = bus.serve("compute", Recorder("second"))
        await bus.call("compute", "whoami")
        await first.stop()
        # The other server of the topic keeps the bus's one consumer of it, and every message.
        assert {await bus.call("compute", "whoami") for _ in range(4)} == {"second"}
        assert queue_counts(rabbit_url, bus, "compute") == (0, 1)
        fanout_queues = f"{Names(bus.namespace).fanout_exchange('compute')}_"

        def fanout_queue_count() -> int:
            names = rabbitmqctl("list_queues", "name").splitlines()
            return sum(name.startswith(fanout_queues) for name in names)

        assert await asyncio.to_thread(fanout_queue_count) == 1
        await second.stop()
        assert queue_counts(rabbit_url, bus, "compute") == (0, 0)
        assert await asyncio.to_thread(fanout_queue_count) == 0

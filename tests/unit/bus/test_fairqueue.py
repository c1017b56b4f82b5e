"""The queue behind each in-process topic: idle consumers take turns, nothing is lost."""

from __future__ import annotations

import asyncio

import pytest

from berth.bus.fairqueue import FairQueue


async def test_an_item_goes_to_the_consumer_that_waited_longest() -> None:
    queue: FairQueue[str] = FairQueue()
    first = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    second = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put("a")
    # A consumer asking now, before the waiting ones run, finds nothing to take.
    assert queue.qsize() == 0
    queue.put("b")
    assert (await first, await second) == ("a", "b")


async def test_items_wait_in_order_for_consumers() -> None:
    queue: FairQueue[int] = FairQueue()
    for n in range(3):
        queue.put(n)
    assert queue.qsize() == 3
    assert [await queue.get() for _ in range(3)] == [0, 1, 2]


async def test_a_consumer_cancelled_after_being_handed_an_item_gives_it_back_first() -> None:
    queue: FairQueue[int] = FairQueue()
    consumer = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.put(1)
    queue.put(2)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert [await queue.get(), await queue.get()] == [1, 2]


async def test_a_consumer_cancelled_while_waiting_takes_nothing() -> None:
    queue: FairQueue[int] = FairQueue()
    gone = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    queue.put(1)
    assert queue.qsize() == 1


async def test_join_waits_until_every_item_is_done() -> None:
    queue: FairQueue[int] = FairQueue()
    await asyncio.wait_for(queue.join(), 1)
    queue.put(1)
    joined = asyncio.create_task(queue.join())
    await queue.get()
    await asyncio.sleep(0)
    assert not joined.done()
    queue.task_done()
    await asyncio.wait_for(joined, 1)

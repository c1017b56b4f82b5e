"""A queue that hands each item straight to the consumer that has waited longest.

``asyncio.Queue`` wakes a waiting consumer but leaves the item in the queue until that consumer
runs, so a consumer that has just finished and asks again first takes it instead: one fast server
of a topic would serve everything while the others idle. Here an item is given to a waiting
consumer the moment it is put, so idle consumers take turns, as a broker's competing consumers do.

A consumer may wait on several queues at once (``first_of``): a server waits for its topic's
messages and for its own copies of fan-outs.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class FairQueue(Generic[T]):
    def __init__(self) -> None:
        self._items: deque[T] = deque()
        # A waiting consumer's slot; one slot may wait in several queues, and takes what the first
        # of them offers, with the queue it came from.
        self._waiting: deque[asyncio.Future[tuple[FairQueue[T], T]]] = deque()
        # Items put and not yet marked done, for ``join``.
        self._unfinished = 0
        self._finished = asyncio.Event()
        self._finished.set()

    def qsize(self) -> int:
        return len(self._items)

    def put(self, item: T) -> None:
        self._unfinished += 1
        self._finished.clear()
        self._offer(item, first=False)

    async def get(self) -> T:
        """The oldest item; if there is none, the next one put, unless a consumer waited longer.

        Cancelled while waiting, it gives back an item it had been handed, at the front.
        """
        _, item = await first_of(self)
        return item

    def task_done(self) -> None:
        self._unfinished -= 1
        if self._unfinished == 0:
            self._finished.set()

    async def join(self) -> None:
        """Wait until every item put has been taken and marked done."""
        await self._finished.wait()

    def _offer(self, item: T, *, first: bool) -> None:
        while self._waiting:
            slot = self._waiting.popleft()
            if not slot.done():
                slot.set_result((self, item))
                return
        if first:
            self._items.appendleft(item)
        else:
            self._items.append(item)


async def first_of(*queues: FairQueue[T]) -> tuple[FairQueue[T], T]:
    """The oldest item of the first of ``queues`` that holds one, with its queue; if none does,
    the next item put in any of them (unless a consumer waited longer there).

    Cancelled while waiting, it gives back an item it had been handed, at the front of its queue.
    """
    for queue in queues:
        if queue._items:
            return queue, queue._items.popleft()
    slot: asyncio.Future[tuple[FairQueue[T], T]] = asyncio.get_running_loop().create_future()
    for queue in queues:
        queue._waiting.append(slot)
    try:
        return await slot
    except asyncio.CancelledError:
        if slot.done() and not slot.cancelled():
            source, item = slot.result()
            source._offer(item, first=True)
        else:
            slot.cancel()
        raise
    finally:
        # The queues that did not hand over an item still hold the slot; a queue that is rarely
        # put to would otherwise collect one finished slot per item its sibling handed out.
        for queue in queues:
            if slot in queue._waiting:
                queue._waiting.remove(slot)

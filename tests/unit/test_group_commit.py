"""Group commit: claims that queue together share a transaction, and each still gets its own answer."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence

import pytest
import sqlalchemy as sa

from berth.common.db import Database
from berth.placement.capacity import Inventory
from berth.placement.store import inventories, providers
from berth.placement.store import schema as s
from berth.placement.store.allocations import AllocationRefused, Claim
from berth.placement.store.consumers import GenerationConflict
from berth.placement.store.group_commit import GroupCommit


@pytest.fixture
def host(placement_db: Database) -> str:
    """A provider with 10 VCPU."""
    with placement_db.write() as conn:
        provider = providers.create(conn, str(uuid.uuid4()), "host")
        inventories.add(conn, provider, "VCPU", Inventory(total=10))
    return provider.uuid


def _claim(host: str, vcpu: int, consumer: str | None = None, **extra: object) -> Claim:
    return Claim(
        consumer_uuid=consumer or str(uuid.uuid4()),
        allocations={host: {"VCPU": vcpu}},
        project_id="p",
        user_id="u",
        **extra,  # type: ignore[arg-type]
    )


def _used(db: Database) -> int:
    with db.read() as conn:
        return int(conn.scalar(sa.select(sa.func.sum(s.allocations.c.used))) or 0)


def _queued_behind_a_slow_leader(
    writer: GroupCommit, batches: Sequence[Sequence[Claim]]
) -> list[BaseException | None]:
    """Write ``batches[0]`` while holding its transaction open until the others have queued,
    then let everything through; each request's error (None when written)."""
    release = threading.Event()
    first_started = threading.Event()
    transaction = writer._transaction

    def slow_first(claims: Sequence[Claim]) -> None:
        if not first_started.is_set():
            first_started.set()
            release.wait(5)
        transaction(claims)

    writer._transaction = slow_first  # type: ignore[method-assign]
    errors: list[BaseException | None] = [None] * len(batches)

    def run(n: int) -> Callable[[], None]:
        def write() -> None:
            try:
                writer.write(batches[n])
            except Exception as exc:
                errors[n] = exc

        return write

    threads = [threading.Thread(target=run(n)) for n in range(len(batches))]
    threads[0].start()
    assert first_started.wait(5)
    for thread in threads[1:]:
        thread.start()
    time.sleep(0.3)  # they reach the queue at once; nothing else runs
    release.set()
    for thread in threads:
        thread.join(10)
    return errors


def test_claims_queued_together_share_one_transaction(placement_db: Database, host: str) -> None:
    writer = GroupCommit(placement_db)
    errors = _queued_behind_a_slow_leader(writer, [[_claim(host, 1)] for _ in range(6)])
    assert errors == [None] * 6
    assert _used(placement_db) == 6
    # The first alone, then the five that queued behind it together.
    assert (writer.batches, writer.batched_requests) == (1, 5)


def test_one_refused_claim_in_a_batch_leaves_the_others_written(
    placement_db: Database, host: str
) -> None:
    writer = GroupCommit(placement_db)
    # 1 + 3 + 20 + 3 + 3 = 30 VCPU asked of 10: only the 20 can never fit.
    claims = [[_claim(host, n)] for n in (1, 3, 20, 3, 3)]
    errors = _queued_behind_a_slow_leader(writer, claims)
    assert [type(e) for e in errors] == [
        type(None), type(None), AllocationRefused, type(None), type(None)
    ]  # fmt: skip
    assert _used(placement_db) == 10
    assert writer.batches == 0


def test_a_consumer_named_twice_is_written_one_request_at_a_time(
    placement_db: Database, host: str
) -> None:
    writer = GroupCommit(placement_db)
    consumer = str(uuid.uuid4())
    new = {"generation": None, "check_generation": True}
    claims = [
        [_claim(host, 1)],
        [_claim(host, 2, consumer, **new)],
        [_claim(host, 3, consumer, **new)],
    ]
    errors = _queued_behind_a_slow_leader(writer, claims)
    # Both expected the consumer to be new: whichever came second is refused.
    assert errors[0] is None
    assert sorted(type(e).__name__ for e in errors[1:]) == ["GenerationConflict", "NoneType"]
    assert isinstance(errors[1] or errors[2], GenerationConflict)
    assert writer.batches == 0
    assert _used(placement_db) in (1 + 2, 1 + 3)


def test_a_writer_alone_writes_at_once(placement_db: Database, host: str) -> None:
    writer = GroupCommit(placement_db)
    for _ in range(3):
        writer.write([_claim(host, 2)])
    assert _used(placement_db) == 6
    assert writer.batches == 0
    with pytest.raises(AllocationRefused):
        writer.write([_claim(host, 5)])
    assert _used(placement_db) == 6
    with placement_db.read() as conn:
        assert providers.get(conn, host).generation == 1 + 3  # inventory, then three claims

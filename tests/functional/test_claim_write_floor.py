"""bench/claim_write: the claims floor's writer keeps usage within capacity, writes a claim whole
or not at all, and writes the claims that queue together in one transaction."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa

from bench import claim_write
from tests import dbs
from tests.conftest import _worker


@pytest.fixture(params=[b for b in dbs.backends() if b != "mysql"])
def floor_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from _floor_database(request, tmp_path)


# Only PostgreSQL's writers lock rows one by one (SQLite's take the whole database).
@pytest.fixture(params=[b for b in dbs.backends() if b == "postgresql"])
def row_locking_floor_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from _floor_database(request, tmp_path)


def _floor_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'claims.db'}"
    else:
        url = dbs.server_url(request.param, _worker(request), "_floor")
        url = "postgresql://" + url.split("://", 1)[1]
    yield url
    claim_write.drop(url)


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(dbs.normalise_url(url))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.exec_driver_sql(sql)]
    finally:
        engine.dispose()


def _vcpu(provider: str, amount: int) -> dict[str, dict[str, dict[str, int]]]:
    return {provider: {"resources": {"VCPU": amount, "MEMORY_MB": 512}}}


def test_claims_from_many_threads_fill_a_provider_and_no_more(floor_url: str) -> None:
    claim_write.prepare(floor_url, {"p1": {"VCPU", "MEMORY_MB"}}, capacity=2_000_000)
    writer = claim_write.ClaimWriter(floor_url)
    granted: list[bool] = []
    lock = threading.Lock()

    def claims(thread: int) -> None:
        for n in range(10):
            fits = writer.claim(f"c{thread}-{n}", "project", "user", _vcpu("p1", 30_000))
            with lock:
                granted.append(fits)

    threads = [threading.Thread(target=claims, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    # 66 claims of 30,000 fit in 2,000,000; the other 14 are refused whole.
    assert granted.count(True) == 66
    assert _rows(floor_url, "SELECT class, used FROM floor_usage ORDER BY class") == [
        ("MEMORY_MB", 66 * 512),
        ("VCPU", 66 * 30_000),
    ]
    assert _rows(floor_url, "SELECT count(*) FROM floor_consumers") == [(66,)]
    assert _rows(floor_url, "SELECT count(*) FROM floor_allocations") == [(132,)]


def test_a_claim_that_does_not_fit_leaves_its_batch_written(floor_url: str) -> None:
    claim_write.prepare(floor_url, {"p1": {"VCPU", "MEMORY_MB"}}, capacity=10_000)
    writer = claim_write.ClaimWriter(floor_url)
    batch = [
        claim_write._Claim("a", "p", "u", _vcpu("p1", 4)),
        claim_write._Claim("too-big", "p", "u", _vcpu("p1", 20_000)),
        claim_write._Claim("b", "p", "u", _vcpu("p1", 4)),
        claim_write._Claim("unknown-class", "p", "u", {"p1": {"resources": {"DISK_GB": 1}}}),
    ]
    writer._write_batch(batch)
    writer.close()
    assert [claim.fits for claim in batch] == [True, False, True, False]
    assert _rows(floor_url, "SELECT consumer FROM floor_allocations ORDER BY consumer") == [
        ("a",),
        ("a",),
        ("b",),
        ("b",),
    ]
    assert _rows(floor_url, "SELECT used FROM floor_usage WHERE class = 'VCPU'") == [(8,)]


def test_a_claim_ended_by_a_deadlock_is_written_again(row_locking_floor_url: str) -> None:
    # Another writer holds p2's row and then asks for p1's, which the claim (p1, then p2) holds:
    # PostgreSQL ends the claim's transaction, the one waiting longest, and it is written again.
    floor_url = row_locking_floor_url
    claim_write.prepare(floor_url, {"p1": {"VCPU", "MEMORY_MB"}, "p2": {"VCPU", "MEMORY_MB"}})
    writer = claim_write.ClaimWriter(floor_url)
    other = psycopg.connect(floor_url)
    update = "UPDATE floor_usage SET used = used + 1 WHERE provider = %s AND class = 'VCPU'"
    other.execute(update, ("p2",))
    both = {**_vcpu("p1", 1), **_vcpu("p2", 1)}
    granted: list[bool] = []
    claiming = threading.Thread(target=lambda: granted.append(writer.claim("c", "p", "u", both)))
    claiming.start()
    time.sleep(0.3)  # the claim now holds p1 and waits for p2
    other.execute(update, ("p1",))
    other.commit()
    claiming.join(30)
    other.close()
    writer.close()
    assert granted == [True]
    used = dict(_rows(floor_url, "SELECT provider, used FROM floor_usage WHERE class = 'VCPU'"))
    assert used == {"p1": 2, "p2": 2}
    assert _rows(floor_url, "SELECT count(*) FROM floor_consumers") == [(1,)]

"""Many writers claiming the same few providers at once never push one past its capacity.

Threads drive the real HTTP app in-process and processes call the store directly, all against one
database per backend. Whatever the interleaving, every provider must end within its capacity and
hold exactly the amounts of the claims that were answered with success, and every consumer must
hold all of what it asked for or nothing.
"""

from __future__ import annotations

import multiprocessing
import random
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import pytest
import sqlalchemy as sa

from berth.common.db import Database
from berth.placement import exceptions
from berth.placement.capacity import Inventory
from berth.placement.service import PlacementService
from berth.placement.store import allocations, inventories, providers, schema
from berth.placement.store.database import open_database
from tests.conftest import wsgi_client

THREADS = 8
CLAIMS_PER_THREAD = 6
PROCESSES = 3
CLAIMS_PER_PROCESS = 6
# (total, reserved, allocation_ratio): small, so that demand far exceeds supply.
STOCK = {"VCPU": (4, 1, 2.0), "MEMORY_MB": (4096, 512, 1.0)}
PROVIDERS = 3


@dataclass(frozen=True)
class Request:
    consumer: str
    allocations: dict[str, dict[str, int]]


def _capacity(resource_class: str) -> int:
    total, reserved, ratio = STOCK[resource_class]
    return int((total - reserved) * ratio)


@pytest.fixture
def provider_uuids(placement_service: PlacementService) -> list[str]:
    made = []
    with placement_service.db.write() as conn:
        for n in range(PROVIDERS):
            provider = providers.create(conn, str(uuid.uuid4()), f"claims-{n}")
            stock = {
                rc: Inventory(
                    total=total, reserved=reserved, max_unit=total, allocation_ratio=ratio
                )
                for rc, (total, reserved, ratio) in STOCK.items()
            }
            inventories.replace(conn, provider, stock)
            made.append(provider.uuid)
    return made


def _requests(seed: int, count: int, provider_uuids: list[str]) -> list[Request]:
    """Claims on one or two providers each, some of them for more than is ever free."""
    rng = random.Random(seed)
    made = []
    for _ in range(count):
        chosen = rng.sample(provider_uuids, rng.choice([1, 2]))
        made.append(
            Request(
                consumer=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                allocations={
                    rp: {"VCPU": rng.randint(1, 3), "MEMORY_MB": rng.choice([256, 512, 1024])}
                    for rp in chosen
                },
            )
        )
    return made


def _claim_over_http(service: PlacementService, requests: list[Request]) -> list[Request]:
    """Send each claim; the ones answered 204. Anything but 204 or 409 fails the test."""
    granted = []
    with wsgi_client(service) as client:
        client.headers.update(
            {
                "x-auth-token": "admin",
                "accept": "application/json",
                "openstack-api-version": "placement 1.38",
            }
        )
        for request in requests:
            body = {
                "allocations": {rp: {"resources": res} for rp, res in request.allocations.items()},
                "project_id": "claims-project",
                "user_id": "claims-user",
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            response = client.put(f"/allocations/{request.consumer}", json=body)
            assert response.status_code in (204, 409), response.text
            if response.status_code == 204:
                granted.append(request)
    return granted


def _claim_in_process(url: str, requests: list[Request], retries: int) -> list[Request]:
    """Claims written through the store from another process, with its own engine."""
    db = open_database(url)
    granted = []
    try:
        for request in requests:
            claim = allocations.Claim(
                consumer_uuid=request.consumer,
                allocations=request.allocations,
                project_id="claims-project",
                user_id="claims-user",
                check_generation=True,
            )
            try:
                allocations.write_retrying(db, retries, partial(allocations.write, claims=[claim]))
            except (allocations.AllocationRefused, exceptions.ConcurrentUpdate):
                continue
            granted.append(request)
    finally:
        db.dispose()
    return granted


def _usage(db: Database) -> dict[tuple[str, str], int]:
    a, rp, rc = schema.allocations, schema.resource_providers, schema.resource_classes
    with db.read() as conn:
        rows = conn.execute(
            sa.select(rp.c.uuid, rc.c.name, sa.func.sum(a.c.used))
            .join(rp, rp.c.id == a.c.resource_provider_id)
            .join(rc, rc.c.id == a.c.resource_class_id)
            .group_by(rp.c.uuid, rc.c.name)
        )
        return {(provider, rc_name): int(used) for provider, rc_name, used in rows}


def _held(db: Database) -> dict[str, dict[str, dict[str, int]]]:
    a, rp, rc = schema.allocations, schema.resource_providers, schema.resource_classes
    held: dict[str, dict[str, dict[str, int]]] = {}
    with db.read() as conn:
        rows = conn.execute(
            sa.select(a.c.consumer_id, rp.c.uuid, rc.c.name, a.c.used)
            .join(rp, rp.c.id == a.c.resource_provider_id)
            .join(rc, rc.c.id == a.c.resource_class_id)
        )
        for consumer, provider, rc_name, used in rows:
            held.setdefault(consumer, {}).setdefault(provider, {})[rc_name] = used
    return held


def _assert_consistent(db: Database, granted: list[Request], asked: int) -> None:
    usage = _usage(db)
    for (_, rc), used in usage.items():
        assert used <= _capacity(rc)
    expected: Counter[tuple[str, str]] = Counter()
    for request in granted:
        for rp, res in request.allocations.items():
            for rc, amount in res.items():
                expected[rp, rc] += amount
    assert usage == dict(expected)
    # All or nothing: exactly the granted consumers hold allocations, each all it asked for.
    assert _held(db) == {r.consumer: r.allocations for r in granted}
    # The race was real: some claims were refused, some granted.
    assert 0 < len(granted) < asked


def _thread_batches(provider_uuids: list[str]) -> Iterator[list[Request]]:
    for n in range(THREADS):
        yield _requests(1000 + n, CLAIMS_PER_THREAD, provider_uuids)


def test_concurrent_http_claims_never_overcommit(
    placement_service: PlacementService, provider_uuids: list[str]
) -> None:
    batches = list(_thread_batches(provider_uuids))
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = pool.map(lambda b: _claim_over_http(placement_service, b), batches)
        granted = [request for batch in results for request in batch]
    _assert_consistent(placement_service.db, granted, THREADS * CLAIMS_PER_THREAD)


def test_concurrent_claims_from_processes_and_threads_never_overcommit(
    placement_service: PlacementService, provider_uuids: list[str]
) -> None:
    url = placement_service.db.engine.url.render_as_string(hide_password=False)
    retries = placement_service.settings.allocation_conflict_retry_count
    process_batches = [
        _requests(2000 + n, CLAIMS_PER_PROCESS, provider_uuids) for n in range(PROCESSES)
    ]
    thread_batches = list(_thread_batches(provider_uuids))[: THREADS // 2]
    context = multiprocessing.get_context("spawn")
    with (
        context.Pool(PROCESSES) as processes,
        ThreadPoolExecutor(max_workers=len(thread_batches)) as threads,
    ):
        pending = [
            processes.apply_async(_claim_in_process, (url, batch, retries))
            for batch in process_batches
        ]
        threaded = threads.map(lambda b: _claim_over_http(placement_service, b), thread_batches)
        granted = [request for batch in threaded for request in batch]
        for result in pending:
            granted.extend(result.get(timeout=60))
    asked = PROCESSES * CLAIMS_PER_PROCESS + len(thread_batches) * CLAIMS_PER_THREAD
    _assert_consistent(placement_service.db, granted, asked)

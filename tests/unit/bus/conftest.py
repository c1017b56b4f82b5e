"""Bus tests are coroutines: each runs in a fresh event loop of its own (no plugin needed).

Tests of what every bus promises take ``new_bus`` and run once per backend: in process, and on
RabbitMQ when ``BERTH_TEST_RABBIT_URL`` names a broker. Each RabbitMQ test has a namespace of
its own, so parallel workers and queues left by an earlier run never meet, and its queues and
exchanges are deleted afterwards.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from berth.bus import Bus, InMemoryBus, RabbitURL, parse_bus_url
from tests.unit.bus.broker import TracedRabbitBus, delete_namespace

RABBIT_ENV = "BERTH_TEST_RABBIT_URL"
NO_RABBIT = f"no RabbitMQ: set {RABBIT_ENV}, e.g. rabbit://guest:guest@127.0.0.1:5672/%2F"
needs_rabbit = pytest.mark.skipif(not os.environ.get(RABBIT_ENV), reason=NO_RABBIT)

NewBus = Callable[..., Bus]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    test = pyfuncitem.obj
    if not inspect.iscoroutinefunction(test):
        return None
    wanted = inspect.signature(test).parameters
    asyncio.run(test(**{name: pyfuncitem.funcargs[name] for name in wanted}))
    return True


@pytest.fixture
def rabbit_url() -> RabbitURL:
    url = os.environ.get(RABBIT_ENV)
    if not url:
        pytest.skip(NO_RABBIT)
    parsed = parse_bus_url(url)
    assert isinstance(parsed, RabbitURL), f"{RABBIT_ENV} is not a rabbit:// URL"
    return parsed


@pytest.fixture
def new_rabbit_bus(rabbit_url: RabbitURL) -> Iterator[NewBus]:
    """Makes RabbitBuses on one namespace of the test's own: several act as several processes."""
    namespace = f"berth-t-{uuid.uuid4().hex[:12]}"
    made: list[TracedRabbitBus] = []

    def new_bus(**options: Any) -> Bus:
        bus = TracedRabbitBus(rabbit_url, namespace=namespace, **options)
        made.append(bus)
        return bus

    yield new_bus
    delete_namespace(rabbit_url, namespace, {topic for bus in made for topic in bus.topics})


@pytest.fixture(params=["memory", pytest.param("rabbit", marks=needs_rabbit)])
def new_bus(request: pytest.FixtureRequest) -> NewBus:
    """Makes buses of one backend: ``new_bus(call_timeout=…, close_timeout=…)``."""
    if request.param == "memory":
        return InMemoryBus
    return cast(NewBus, request.getfixturevalue("new_rabbit_bus"))

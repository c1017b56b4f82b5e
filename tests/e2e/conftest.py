"""The all-in-one stack, started for real in this process, with an HTTP client into it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from berth import config
from berth.allinone.stack import Stack
from berth.common.inprocess import InProcessTransport
from berth.compute.host import fleet as fleets

StackFactory = Callable[[dict[str, Any]], tuple[Stack, httpx.Client]]


@pytest.fixture
def start_stack(tmp_path: Path) -> Iterator[StackFactory]:
    started: list[tuple[Stack, httpx.Client]] = []

    def start(fleet: dict[str, Any], **compute: Any) -> tuple[Stack, httpx.Client]:
        settings = config.Settings(
            data_dir=tmp_path / f"data{len(started)}", compute=config.ComputeSettings(**compute)
        )
        stack = Stack(settings, fleets.parse(fleet), heartbeat_seconds=5)
        stack.start()
        client = httpx.Client(
            transport=InProcessTransport(stack.app()), base_url="http://berth", timeout=60
        )
        client.headers["x-auth-token"] = "admin"
        # The tests boot more servers in one project than upstream's default quotas allow.
        unlimited = {"quota_set": {"instances": -1, "cores": -1, "ram": -1}}
        client.put("/compute/v2.1/os-quota-sets/admin", json=unlimited).raise_for_status()
        started.append((stack, client))
        return stack, client

    yield start  # type: ignore[misc]
    for stack, client in started:
        client.close()
        stack.stop()

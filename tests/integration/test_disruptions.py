"""The distributed layout while its broker and its database server restart under it: every
service reconnects by itself (no process is restarted), every build finishes or fails cleanly,
clients get 503 rather than a hang, and the audit is clean afterwards.

These restart the machine's RabbitMQ and PostgreSQL, so they run only when
``BERTH_TEST_DISRUPTIVE`` is set too (``.ci/run`` sets it and runs them after the rest, alone).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.cloud import (
    COMPUTE,
    Cloud,
    distributed_cloud,
    make_public_network,
    needs_servers,
)

pytestmark = [
    needs_servers,
    pytest.mark.disruptive,
    pytest.mark.skipif(
        not os.environ.get("BERTH_TEST_DISRUPTIVE"),
        reason="restarts the machine's RabbitMQ and PostgreSQL: set BERTH_TEST_DISRUPTIVE=1",
    ),
]

SERVICES = ("placement", "network", "compute-api", "scheduler", "super-conductor")


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    with distributed_cloud(tmp_path_factory.mktemp("disrupted")) as started:
        yield started


@pytest.fixture(scope="module")
def public(cloud: Cloud) -> str:
    return make_public_network(cloud)


def _pids(cloud: Cloud) -> dict[str, list[int]]:
    return {name: sorted(cloud.pids("serve", name)) for name in ("scheduler", "super-conductor")}


def _ended(cloud: Cloud, servers: list[str]) -> list[str]:
    return [cloud.wait(server_id, timeout=120)["status"] for server_id in servers]


def test_a_broker_restart_during_boots(cloud: Cloud, public: str) -> None:
    before = _pids(cloud)
    servers = [cloud.boot(f"mq{i}", [{"uuid": public}]) for i in range(6)]
    subprocess.run(["rabbitmqctl", "-q", "stop_app"], check=True, timeout=60)
    time.sleep(2)
    subprocess.run(["rabbitmqctl", "-q", "start_app"], check=True, timeout=60)
    assert set(_ended(cloud, servers)) <= {"ACTIVE", "ERROR"}
    # Every service found the broker again by itself: a boot after the restart works.
    after = cloud.wait(_boot_when_accepted(cloud, public), timeout=120)
    assert after["status"] == "ACTIVE", after.get("fault")
    assert _pids(cloud) == before
    for server_id in [*servers, after["id"]]:
        cloud.delete(server_id)
    cloud.audit()


def test_a_database_restart_under_load(cloud: Cloud, public: str) -> None:
    before = _pids(cloud)
    answers: list[int] = []
    slowest = [0.0]
    stop = threading.Event()

    def load() -> None:
        with httpx.Client(timeout=15) as client:
            while not stop.is_set():
                started = time.monotonic()
                answer = client.get(f"{cloud.compute}/servers", headers=COMPUTE)
                slowest[0] = max(slowest[0], time.monotonic() - started)
                answers.append(answer.status_code)
                time.sleep(0.05)

    reader = threading.Thread(target=load)
    reader.start()
    try:
        servers = [cloud.boot(f"db{i}", [{"uuid": public}]) for i in range(4)]
        _restart_postgresql()
        time.sleep(2)
    finally:
        stop.set()
        reader.join()
    # Meanwhile the API answered, 503 while the database was away, never a hang or a 500.
    assert set(answers) <= {200, 503}, sorted(set(answers))
    assert slowest[0] < 15
    assert set(_ended(cloud, servers)) <= {"ACTIVE", "ERROR"}
    after = cloud.wait(_boot_when_accepted(cloud, public), timeout=120)
    assert after["status"] == "ACTIVE", after.get("fault")
    assert _pids(cloud) == before
    for server_id in [*servers, after["id"]]:
        cloud.delete(server_id)
    cloud.audit()


def _boot_when_accepted(cloud: Cloud, network: str) -> str:
    """A boot, asked again while the API answers 503 (its database or bus coming back)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return cloud.boot("after", [{"uuid": network}])
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _restart_postgresql() -> None:
    (version,) = [p.name for p in Path("/etc/postgresql").iterdir()]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True, timeout=120,
    )  # fmt: skip

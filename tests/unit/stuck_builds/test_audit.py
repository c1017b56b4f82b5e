"""The audit reports builds that stopped half way, each with what it holds, and is not clean."""

from __future__ import annotations

import datetime as dt

from berth.compute.audit import audit
from tests.unit.stuck_builds.world import (
    HOST,
    LONG_AGO,
    Services,
    stuck_build_request,
    stuck_instance,
)

HOLDS = f"holds allocation on {HOST} (DISK_GB=1, MEMORY_MB=512, VCPU=1); ports "


def test_stuck_builds_are_reported_with_what_they_hold(world: Services) -> None:
    request, instance = stuck_build_request(world), stuck_instance(world)
    report = audit(world.cells, world.placement, world.network)
    assert not report.clean
    by_server = {line.split(":")[0]: line for line in report.stuck_builds}
    assert set(by_server) == {request.uuid, instance.uuid}
    since = f"since {LONG_AGO:%Y-%m-%d %H:%M:%S}, {HOLDS}"
    assert by_server[request.uuid].startswith(f"{request.uuid}: a BuildRequest {since}")
    assert by_server[instance.uuid].startswith(
        f"{instance.uuid}: building in cell1 on {HOST} (task spawning) {since}"
    )
    for held in (request, instance):
        line = by_server[held.uuid]
        assert f"{held.made_port} (made by compute, bound to {HOST})" in line
        assert f"{held.user_port} (the user's, bound to {HOST})" in line
    assert f"stuck build: {by_server[request.uuid]}" in report.lines()


def test_a_build_is_stuck_only_past_the_threshold(world: Services) -> None:
    stuck_instance(world)
    assert audit(world.cells, world.placement, world.network, dt.timedelta(hours=2)).clean
    assert len(audit(world.cells, world.placement, world.network).stuck_builds) == 1

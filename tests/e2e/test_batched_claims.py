"""Requests of one shape scheduled in one pass with their claims written together: each request
keeps its own answer, a write Placement refuses is claimed again one by one, and no provider
is ever over-committed."""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import pytest

from berth.allinone.stack import Stack
from berth.compute import rpc
from berth.compute.db import instances
from berth.compute.objects.request_spec import Flavor, Image, RequestSpec
from berth.compute.objects.selection import Selection
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

# Two hosts with room for four servers each.
HOST = {"vcpus": 8, "cpu_allocation_ratio": 1.0, "memory_mb": 16384, "disk_gb": 100}
FLEET = {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 2, **HOST}]}
FLAVOR = Flavor("small", "small", vcpus=2, memory_mb=512, root_gb=1)


def _spec(zone: str | None = None) -> RequestSpec:
    return RequestSpec(
        instance_uuids=(str(uuid.uuid4()),), project_id="project", user_id="user",
        flavor=FLAVOR, image=Image("image"), availability_zone=zone,
    )  # fmt: skip


def _together(stack: Stack) -> tuple[list[int], Any]:
    """A record of the sizes of the claims written together, and the original write."""
    sizes: list[int] = []
    written = stack.placement_client.claim_together

    def recorded(claims: Sequence[Any]) -> bool:
        sizes.append(len(claims))
        return written(claims)

    stack.placement_client.claim_together = recorded  # type: ignore[method-assign]
    return sizes, written


def _schedule_at_once(stack: Stack, specs: list[RequestSpec]) -> list[Any]:
    """Each spec's answer (its selections, or the error it raised), all asked concurrently:
    the first pass's leader waits in its Placement query until every other request has
    arrived, so that they all join its batch."""
    asked = stack.placement_client.allocation_candidates_body
    first, everyone_asked = threading.Lock(), threading.Event()

    def held(params: Any) -> bytes:
        if first.acquire(blocking=False):
            everyone_asked.wait(30)
        return asked(params)

    stack.placement_client.allocation_candidates_body = held  # type: ignore[method-assign]
    answers: list[Any] = [None] * len(specs)

    def ask(i: int) -> None:
        try:
            answers[i] = stack.scheduler.select_destinations(specs[i])
        except Exception as exc:
            answers[i] = exc

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(specs))]
    for thread in threads:
        thread.start()
    time.sleep(0.5)  # each joins the open batch at once; this is ample on a busy machine
    everyone_asked.set()
    for thread in threads:
        thread.join()
    return answers


def _vcpus_used(stack: Stack, provider: str) -> int:
    usages = stack.placement_client.client.get(f"/resource_providers/{provider}/usages")
    return int(usages.json()["usages"].get("VCPU", 0))


def _held(stack: Stack, consumer: str) -> dict[str, Any]:
    return stack.placement_client.allocations(consumer)["allocations"]  # type: ignore[no-any-return]


def test_a_batch_claims_together_and_each_request_keeps_its_answer(
    start_stack: StackFactory,
) -> None:
    stack, _ = start_stack(FLEET)
    sizes, _ = _together(stack)
    specs = [_spec() for _ in range(6)]
    answers = _schedule_at_once(stack, specs)
    # The leader and the five that joined it while it asked Placement: one write.
    assert sizes == [6], sizes
    assert all(isinstance(a, list) for a in answers), answers
    for spec, [[chosen, *_]] in zip(specs, answers, strict=True):
        assert isinstance(chosen, Selection)
        assert _held(stack, spec.instance_uuids[0]).keys() == {chosen.node_uuid}
    hosts = {a[0][0].node_uuid for a in answers}
    assert sum(_vcpus_used(stack, h) for h in hosts) == 12


def test_a_full_batch_fails_only_the_members_no_host_can_take(
    start_stack: StackFactory,
) -> None:
    stack, _ = start_stack(FLEET)
    answers = _schedule_at_once(stack, [_spec() for _ in range(10)])  # room for 8
    placed = [a for a in answers if isinstance(a, list)]
    refused = [a for a in answers if isinstance(a, rpc.NoValidHost)]
    assert (len(placed), len(refused)) == (8, 2), answers
    for host in {a[0][0].node_uuid for a in placed}:
        assert _vcpus_used(stack, host) == 8


def test_a_write_refused_together_is_claimed_one_by_one(start_stack: StackFactory) -> None:
    stack, _ = start_stack(FLEET)
    sizes, written = _together(stack)
    taken: list[str] = []

    def someone_else_first(claims: Sequence[Any]) -> bool:
        # Another writer fills the host the batch's first member chose, just before the write.
        if not taken:
            full = next(iter(claims[0].allocations))
            taken.append(full)
            foreign = {full: {"resources": {"VCPU": 8 - _vcpus_used(stack, full)}}}
            assert stack.placement_client.claim(str(uuid.uuid4()), foreign, "other", "other")
        sizes.append(len(claims))
        return written(claims)

    stack.placement_client.claim_together = someone_else_first  # type: ignore[method-assign]
    specs = [_spec() for _ in range(4)]
    answers = _schedule_at_once(stack, specs)
    assert sizes == [4], sizes  # the write of four was refused, then each claimed alone
    assert all(isinstance(a, list) for a in answers), answers
    [full] = taken
    assert _vcpus_used(stack, full) == 8
    for spec, [[chosen, *_]] in zip(specs, answers, strict=True):
        assert _held(stack, spec.instance_uuids[0]).keys() == {chosen.node_uuid}


def _service_id(client: httpx.Client, host: str) -> str:
    params = {"host": host, "binary": "nova-compute"}
    [service] = w.ok(client.get("/compute/v2.1/os-services", params=params, headers=_SERVICES))[
        "services"
    ]
    return str(service["id"])


def test_the_next_pass_of_a_shape_asks_placement_after_the_claims_before_it(
    start_stack: StackFactory,
) -> None:
    # While a pass of the shape claims, the next one's leader waits with its batch open: it
    # asks Placement once the claims before it are written, with everyone who came meanwhile.
    stack, _ = start_stack(FLEET)
    sizes, _ = _together(stack)
    client = stack.placement_client
    asked, claimed = client.allocation_candidates_body, client.claim
    events: list[str] = []
    holding, release = threading.Event(), threading.Event()

    def ask(params: Any) -> bytes:
        events.append("ask")
        return asked(params)

    def claim(*args: Any) -> bool:
        if not holding.is_set():
            holding.set()
            release.wait(30)
        done = claimed(*args)
        events.append("claimed")
        return done

    client.allocation_candidates_body = ask  # type: ignore[method-assign]
    client.claim = claim  # type: ignore[method-assign]
    specs = [_spec() for _ in range(3)]
    answers: list[Any] = [None] * len(specs)

    def schedule(i: int) -> None:
        answers[i] = stack.scheduler.select_destinations(specs[i])

    threads = [threading.Thread(target=schedule, args=(i,)) for i in range(len(specs))]
    threads[0].start()
    assert holding.wait(30)
    for thread in threads[1:]:
        thread.start()
    time.sleep(0.5)  # ample for the two to arrive and, were they not to wait, to ask
    assert events == ["ask"]
    release.set()
    for thread in threads:
        thread.join()
    assert events == ["ask", "claimed", "ask"]
    assert sizes == [2], sizes
    assert all(isinstance(a, list) for a in answers), answers


def _service_update(
    name: str, body: dict[str, object]
) -> Callable[[Stack, httpx.Client, str], None]:
    """A change, called ``name`` (the test's id), that updates the host's compute service."""

    def change(stack: Stack, client: httpx.Client, host: str) -> None:
        url = f"/compute/v2.1/os-services/{_service_id(client, host)}"
        w.ok(client.put(url, json=body, headers=_SERVICES))

    change.__name__ = name
    return change


_force_down = _service_update("_force_down", {"forced_down": True})
_disable = _service_update("_disable", {"status": "disabled"})


def _zone_elsewhere(stack: Stack, client: httpx.Client, host: str) -> None:
    body = {"aggregate": {"name": "elsewhere", "availability_zone": "az-elsewhere"}}
    made = w.ok(client.post("/compute/v2.1/os-aggregates", json=body, headers=w.COMPUTE))
    url = f"/compute/v2.1/os-aggregates/{made['aggregate']['id']}/action"
    w.ok(client.post(url, json={"add_host": {"host": host}}, headers=w.COMPUTE))


def _build_failed(stack: Stack, client: httpx.Client, host: str) -> None:
    cell = stack.compute.cells.cell_of_host(host)
    assert cell is not None
    with stack.compute.cells.database(cell).write() as conn:
        instances.add_fault(conn, str(uuid.uuid4()), 500, "Build failed", host=host)


_SERVICES = {"openstack-api-version": "compute 2.53"}


@pytest.mark.parametrize("change", [_force_down, _disable, _zone_elsewhere, _build_failed])
def test_a_host_that_changed_between_passes_of_a_shape_is_ranked_again(
    start_stack: StackFactory, change: Callable[[Stack, httpx.Client, str], None]
) -> None:
    # The first pass ranks both hosts and its shape keeps their outcomes; then the host it
    # chose is forced down, disabled, put in another zone, or fails a build. The next passes
    # of the shape must see it (its host cache made a new HostState), not the outcome kept
    # from before.
    stack, client = start_stack(FLEET)
    spec = functools.partial(_spec, zone="nova")
    [[first, *_]] = stack.scheduler.select_destinations(spec())
    change(stack, client, first.host)
    later = {stack.scheduler.select_destinations(spec())[0][0].host for _ in range(4)}
    assert first.host not in later

"""The allocation rewrite at the Placement edge: generations, retries, refusals (mock transport)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from berth.network import exceptions
from berth.network import resource_request as rr
from berth.network.allocation_change import PortRequestChange
from berth.network.model import MinimumBandwidthRule
from berth.network.placement_allocations import PlacementAllocations

PORT, SERVER, BRIDGE = "port-1", "server-1", "rp-bridge"
EGR = "NET_BW_EGR_KILOBIT_PER_SEC"
CHANGE = PortRequestChange(
    PORT,
    SERVER,
    rr.resource_request(PORT, "normal", [MinimumBandwidthRule("egress", 1000)], ["public"]),
    rr.resource_request(PORT, "normal", [MinimumBandwidthRule("egress", 3000)], ["public"]),
    {rr.group_id(PORT, "bandwidth"): BRIDGE},
)


def _held(generation: int, consumer_type: str = "INSTANCE") -> dict[str, Any]:
    return {
        "allocations": {"rp-node": {"generation": 1, "resources": {"VCPU": 1}},
                        BRIDGE: {"generation": 4, "resources": {EGR: 1000}}},
        "project_id": "p", "user_id": "u", "consumer_generation": generation,
        "consumer_type": consumer_type,
    }  # fmt: skip


def _placement(
    puts: list[httpx.Response], consumer_type: str = "INSTANCE"
) -> tuple[PlacementAllocations, list[dict[str, Any]]]:
    """A Placement that answers GETs with generation 7, 8, ... and PUTs from ``puts``."""
    sent: list[dict[str, Any]] = []
    gets = iter(range(7, 100))

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["openstack-api-version"] == "placement 1.39"
        assert request.url.path == f"/allocations/{SERVER}"
        if request.method == "GET":
            return httpx.Response(200, json=_held(next(gets), consumer_type))
        sent.append(json.loads(request.content))
        return puts.pop(0)

    client = httpx.Client(transport=httpx.MockTransport(answer), base_url="http://placement")
    return PlacementAllocations(client), sent


def _error(status: int, code: str, detail: str = "") -> httpx.Response:
    return httpx.Response(
        status, json={"errors": [{"status": status, "code": code, "detail": detail}]}
    )


def test_the_write_names_the_generation_it_read_and_retries_a_concurrent_update() -> None:
    placement, sent = _placement([_error(409, "placement.concurrent_update"), httpx.Response(204)])
    placement.apply(SERVER, [CHANGE])
    assert [body["consumer_generation"] for body in sent] == [7, 8]
    assert sent[-1] == {
        "allocations": {"rp-node": {"resources": {"VCPU": 1}}, BRIDGE: {"resources": {EGR: 3000}}},
        "project_id": "p", "user_id": "u", "consumer_generation": 8, "consumer_type": "INSTANCE",
    }  # fmt: skip


def test_a_consumer_of_unknown_type_is_written_back_as_an_instance() -> None:
    placement, sent = _placement([httpx.Response(204)], consumer_type="unknown")
    placement.apply(SERVER, [CHANGE])
    assert sent[0]["consumer_type"] == "INSTANCE"


def test_a_consumer_that_keeps_changing_is_given_up_on() -> None:
    placement, sent = _placement([_error(409, "placement.concurrent_update")] * 4)
    with pytest.raises(exceptions.QosPolicyChangeRefused) as caught:
        placement.apply(SERVER, [CHANGE])
    assert str(caught.value).startswith("allocation-contended")
    assert len(sent) == 4


def test_no_room_on_the_provider_is_refused_naming_it_and_the_resource() -> None:
    detail = "Unable to allocate inventory: ... would exceed the capacity."
    placement, _ = _placement([_error(409, "placement.undefined_code", detail)])
    with pytest.raises(exceptions.QosPolicyChangeRefused) as caught:
        placement.apply(SERVER, [CHANGE])
    message = str(caught.value)
    assert message.startswith("placement-refused")
    assert f"{EGR} +2000 on provider {BRIDGE}" in message and detail in message


@pytest.mark.parametrize(
    "fault",
    [
        lambda request: httpx.Response(503, text="down"),
        lambda request: (_ for _ in ()).throw(httpx.ConnectError("refused", request=request)),
    ],
)
def test_a_placement_that_does_not_answer_is_unavailable(
    fault: Callable[[httpx.Request], httpx.Response],
) -> None:
    client = httpx.Client(transport=httpx.MockTransport(fault), base_url="http://placement")
    with pytest.raises(exceptions.ServiceUnavailable):
        PlacementAllocations(client).apply(SERVER, [CHANGE])

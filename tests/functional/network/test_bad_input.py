"""Bodies no client should send are 4xx NeutronError documents, never a 500 (issue 20)."""

from __future__ import annotations

import httpx
import pytest

from berth.common.body import MAX_BODY_BYTES
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for

# A value a thousand levels deep (a network's name here) is a 500 without the depth limit.
DEEP = b'{"network": {"name": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1002


@pytest.fixture
def member(network_service: NetworkService) -> httpx.Client:
    return network_client_for(network_service, "alice", roles=MEMBER_ROLES)


def test_a_body_nested_a_thousand_deep_is_a_bad_request(member: httpx.Client) -> None:
    answer = member.post(
        "/v2.0/networks", content=DEEP, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400, answer.text
    assert "nested deeper" in answer.json()["NeutronError"]["message"]


def test_a_body_past_the_size_limit_is_too_large(member: httpx.Client) -> None:
    name = "n" * MAX_BODY_BYTES
    answer = member.post("/v2.0/networks", json={"network": {"name": name}})
    assert answer.status_code == 413, answer.text
    assert answer.json()["NeutronError"]["type"] == "RequestEntityTooLarge"

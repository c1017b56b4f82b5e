"""Bodies and query values no client should send are 4xx compute fault documents, never a 500
(issue 20)."""

from __future__ import annotations

import httpx
import pytest

from berth.common.body import MAX_BODY_BYTES
from berth.compute.api.app import build_app
from berth.compute.service import ComputeService
from tests.functional.asgi_calls import (
    check_failure_is_one_error_line,
    check_hang_up_is_one_debug_line,
)

# A value a thousand levels deep (a server's name here) is a 500 without the depth limit.
DEEP = b'{"server": {"name": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1002


def test_a_body_nested_a_thousand_deep_is_a_bad_request(alice: httpx.Client) -> None:
    answer = alice.post("/v2.1/servers", content=DEEP, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nested deeper" in answer.json()["badRequest"]["message"]


def test_a_body_past_the_size_limit_is_too_large(alice: httpx.Client) -> None:
    answer = alice.post("/v2.1/servers", json={"server": {"name": "n" * MAX_BODY_BYTES}})
    assert answer.status_code == 413, answer.text
    assert answer.json()["overLimit"]["code"] == 413


@pytest.mark.parametrize("name", ["minRam", "minDisk"])
@pytest.mark.parametrize("value", [2**63, 2**64, 2**31])
def test_a_minimum_past_the_column_range_is_a_bad_request(
    alice: httpx.Client, name: str, value: int
) -> None:
    answer = alice.get(f"/v2.1/flavors?{name}={value}")
    assert answer.status_code == 400, answer.text
    assert name in answer.json()["badRequest"]["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/v2.1/servers?limit=99999999999999999999",
        "/v2.1/servers/detail?marker=x&limit=99999999999999999999",
        "/v2.1/flavors?limit=99999999999999999999",
        "/v2.1/os-keypairs?limit=99999999999999999999",
        "/v2.1/os-migrations?limit=99999999999999999999",
        "/v2.1/os-hypervisors/detail?limit=99999999999999999999",
        "/v2.1/os-aggregates/99999999999999999999",
        "/v2.1/os-simple-tenant-usage?detailed=99999999999999999999",
    ],
)
def test_huge_numbers_in_queries_are_never_a_server_error(compute: httpx.Client, path: str) -> None:
    assert compute.get(path).status_code < 500


def test_a_client_that_hangs_up_mid_request_is_one_debug_line(
    compute_service: ComputeService, caplog: pytest.LogCaptureFixture
) -> None:
    check_hang_up_is_one_debug_line(build_app(compute_service), "POST", "/v2.1/flavors", caplog)


def test_a_server_error_is_one_error_line_with_the_request_id(
    compute_service: ComputeService, caplog: pytest.LogCaptureFixture
) -> None:
    app = build_app(compute_service)
    check_failure_is_one_error_line(app, app.threads, "POST", "/v2.1/flavors", caplog)

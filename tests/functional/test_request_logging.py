"""What the log says about requests that did not end well (issue 20): a client that hangs up
mid-request is one DEBUG line without a traceback; a request answered with a 5xx is one ERROR
line with its request id, its traceback at DEBUG only."""

from __future__ import annotations

from typing import Any

import pytest

from berth.network.app import build_app as build_network_app
from berth.network.service import NetworkService
from berth.placement.app import build_app as build_placement_app
from berth.placement.service import PlacementService
from tests.functional.asgi_calls import (
    check_failure_is_one_error_line,
    check_hang_up_is_one_debug_line,
)

CALLS = {"placement": ("POST", "/resource_providers"), "network": ("POST", "/v2.0/networks")}


@pytest.fixture(params=sorted(CALLS))
def api(
    request: pytest.FixtureRequest,
    placement_service: PlacementService,
    network_service: NetworkService,
) -> tuple[str, Any]:
    name = str(request.param)
    if name == "placement":
        return name, build_placement_app(placement_service)
    return name, build_network_app(network_service)


def test_a_client_that_hangs_up_mid_request_is_one_debug_line(
    api: tuple[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    name, app = api
    check_hang_up_is_one_debug_line(app, *CALLS[name], caplog)


def test_a_server_error_is_one_error_line_with_the_request_id(
    api: tuple[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    name, app = api
    check_failure_is_one_error_line(app, app.threads, *CALLS[name], caplog)

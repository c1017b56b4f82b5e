"""An API whose database cannot be reached answers 503 in its own error format, at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2wsgi import ASGIMiddleware

from berth.common.db import Database
from berth.compute.api.app import build_app as build_compute_app
from berth.compute.service import ComputeService
from berth.config import ComputeSettings, NetworkSettings, PlacementSettings
from berth.image.app import build_app as build_image_app
from berth.image.data import FileStore
from berth.network.app import build_app as build_network_app
from berth.network.service import NetworkService
from berth.placement.app import build_app as build_placement_app
from berth.placement.service import PlacementService
from tests.rpc_fakes import NoMessages

# Nothing listens on port 1: every connection is refused, as while a database restarts.
GONE = "postgresql://postgres@127.0.0.1:1/berth"


def _placement() -> Any:
    return build_placement_app(PlacementService.from_settings(PlacementSettings(), GONE))


def _network() -> Any:
    return build_network_app(NetworkService(settings=NetworkSettings(), db=Database(GONE)))


def _compute() -> Any:
    service = ComputeService(ComputeSettings(), Database(GONE), NoMessages(), NoMessages())
    return build_compute_app(service)


def _image() -> Any:
    return build_image_app(Database(GONE), FileStore(Path("/nonexistent/images")))


@pytest.mark.parametrize(
    ("app", "path", "error"),
    [
        (_placement, "/resource_providers", lambda body: body["errors"][0]["detail"]),
        (_network, "/v2.0/networks", lambda body: body["NeutronError"]["message"]),
        (_compute, "/v2.1/flavors", lambda body: body["serviceUnavailable"]["message"]),
        (_image, "/v2/images", lambda body: body["message"]),
    ],
)
def test_an_unreachable_database_is_a_503_in_the_apis_format(
    app: Callable[[], Any], path: str, error: Callable[[Any], str]
) -> None:
    transport = httpx.WSGITransport(app=ASGIMiddleware(app()))
    with httpx.Client(transport=transport, base_url="http://api") as client:
        started = time.monotonic()
        answer = client.get(path, headers={"x-auth-token": "admin"})
    assert answer.status_code == 503, answer.text
    assert "database is unavailable" in error(answer.json())
    assert time.monotonic() - started < 10

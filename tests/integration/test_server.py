"""The real server: several workers behind one port, schema created on start, clean SIGTERM."""

from __future__ import annotations

import http.client
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.integration.server import running_placement


def test_serves_with_workers_and_stops_cleanly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placement.db'}"
    with running_placement(url, workers=2) as base:
        root = httpx.get(base + "/", headers={"openstack-api-version": "placement latest"})
        assert root.status_code == 200
        assert root.headers["openstack-api-version"] == "placement 1.39"
        listing = httpx.get(base + "/resource_providers", headers={"x-auth-token": "admin"})
        assert listing.status_code == 200
        assert listing.json() == {"resource_providers": []}
        unauthorized = httpx.get(base + "/resource_providers")
        assert unauthorized.status_code == 401
    assert (tmp_path / "placement.db").exists()


def test_cors_origin_from_the_command_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placement.db'}"
    with running_placement(url, "--cors-allowed-origin", "http://valid.example.com") as base:
        preflight = httpx.options(
            base + "/resource_providers",
            headers={
                "origin": "http://valid.example.com",
                "access-control-request-method": "GET",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "http://valid.example.com"
        refused = httpx.options(
            base + "/resource_providers",
            headers={"origin": "http://evil.example.com", "access-control-request-method": "GET"},
        )
        assert "access-control-allow-origin" not in refused.headers


def _root_again_after(base: str, idle: float) -> int:
    """The status of a second request on one kept-alive connection, sent ``idle`` seconds after
    the first was answered (http.client does not reconnect behind the caller's back)."""
    parts = urlsplit(base)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        connection.request("GET", "/")
        first = connection.getresponse()
        first.read()
        assert first.status == 200 and not first.will_close
        time.sleep(idle)
        connection.request("GET", "/")
        return connection.getresponse().status
    finally:
        connection.close()


def test_an_idle_connection_outlives_a_polling_clients_pause(tmp_path: Path) -> None:
    # The openstack CLI's --wait polls every 5 s on one connection; a server that closed idle
    # connections at 5 s (uvicorn's own default) now and then reset the poll that met the close.
    with running_placement(f"sqlite:///{tmp_path / 'placement.db'}") as base:
        assert _root_again_after(base, 6.0) == 200


def test_the_keepalive_timeout_closes_idle_connections(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'placement.db'}"
    # Closed by the server while idle: http.client's RemoteDisconnected (or a reset) is a
    # ConnectionError.
    with (
        running_placement(url, env={"BERTH_KEEPALIVE_TIMEOUT": "1"}) as base,
        pytest.raises(ConnectionError),
    ):
        _root_again_after(base, 2.5)

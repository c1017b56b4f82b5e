"""The real server: several workers behind one port, schema created on start, clean SIGTERM."""

from __future__ import annotations

from pathlib import Path

import httpx

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

"""Shared fixtures: a placement database per backend, the app over it, and an HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2wsgi import ASGIMiddleware

from berth.common.db import Database
from berth.config import NetworkSettings, PlacementSettings
from berth.network.app import build_app as build_network_app
from berth.network.service import NetworkService
from berth.placement.app import build_app
from berth.placement.policy import PolicyEnforcer
from berth.placement.service import PlacementService
from tests import dbs


def _worker(request: pytest.FixtureRequest) -> str:
    return str(getattr(request.config, "workerinput", {}).get("workerid", "main"))


@pytest.fixture(scope="session", params=dbs.backends())
def placement_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def placement_db(
    placement_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_database(placement_backend, _worker(request), tmp_path)
    yield db
    db.dispose()


def make_service(db: Database, **settings: object) -> PlacementService:
    """A service over ``db``; its candidate index is checked against the database after every
    update, so a write that forgets to log its change fails the test that made it."""
    settings.setdefault("verify_index", True)
    placement = PlacementSettings(**settings)  # type: ignore[arg-type]
    return PlacementService(settings=placement, db=db, policy=PolicyEnforcer(placement))


def wsgi_client(service: PlacementService, base_url: str = "http://placement") -> httpx.Client:
    """An HTTP client that calls the app in-process, through the full middleware stack."""
    app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
    return httpx.Client(transport=httpx.WSGITransport(app=app), base_url=base_url)


@pytest.fixture
def placement_service(placement_db: Database) -> PlacementService:
    return make_service(placement_db)


@pytest.fixture
def client(placement_service: PlacementService) -> Iterator[httpx.Client]:
    with wsgi_client(placement_service) as c:
        c.headers.update({"x-auth-token": "admin", "accept": "application/json"})
        yield c


@pytest.fixture(scope="session", params=dbs.backends())
def network_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def network_db(
    network_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_network_database(network_backend, _worker(request), tmp_path)
    yield db
    db.dispose()


@pytest.fixture
def network_service(network_db: Database) -> NetworkService:
    return NetworkService(settings=NetworkSettings(), db=network_db)


# A project member's roles as Keystone puts them in a token: member implies reader.
MEMBER_ROLES = "member,reader"


def network_client_for(
    service: NetworkService,
    token: str = "admin",
    base_url: str = "http://network",
    roles: str | None = None,
) -> httpx.Client:
    """An in-process HTTP client of the network API, authenticated by noauth2 ``token`` with
    ``roles`` as X-Roles (none: noauth2's own, ``admin`` for the ``admin`` user)."""
    app = ASGIMiddleware(build_network_app(service))  # type: ignore[arg-type]
    client = httpx.Client(transport=httpx.WSGITransport(app=app), base_url=base_url)
    client.headers.update({"x-auth-token": token, "accept": "application/json"})
    if roles is not None:
        client.headers["x-roles"] = roles
    return client


@pytest.fixture
def network_client(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service) as c:
        yield c

"""What the Compute API tests share: an API database and one cell (cell1) with its own database,
on SQLite always and on PostgreSQL and MariaDB when their URLs are set (see ``tests/dbs.py``);
the compute service over them with in-process clients; and, for the tests that mirror into it, a
real Placement in process on the same backend.

``hosts.add("h1")`` registers a compute host the way its host agent would: a ``nova-compute``
service that has just reported, a compute node (its uuid is also its provider's), the host mapped
to cell1, and the provider in Placement when the service has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2wsgi import ASGIMiddleware

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.api.app import build_app
from berth.compute.cells import Cell
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import api_schema, cell_schema, cells, compute_nodes, migrate, services
from berth.compute.service import ComputeService
from berth.config import ComputeSettings
from tests import dbs
from tests.conftest import MEMBER_ROLES, make_service, wsgi_client
from tests.rpc_fakes import NoMessages

CELL1_UUID = "11111111-1111-4111-8111-111111111111"
ADMIN = {"x-auth-token": "admin"}
# Project members' tokens as Keystone issues them: member implies reader. Nova's defaults let a
# token of the project with neither role do nothing.
ALICE = {"x-auth-token": "alice", "x-roles": MEMBER_ROLES}
BOB = {"x-auth-token": "bob", "x-roles": MEMBER_ROLES}


def version(minor: int) -> dict[str, str]:
    """The header asking for compute microversion 2.<minor>."""
    return {"openstack-api-version": f"compute 2.{minor}"}


def _worker(request: pytest.FixtureRequest) -> str:
    return str(getattr(request.config, "workerinput", {}).get("workerid", "main"))


@pytest.fixture(scope="session", params=dbs.backends())
def compute_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api_db(
    compute_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_migrated_database(
        compute_backend, _worker(request), tmp_path, "_capi", migrate.sync_api, api_schema.metadata
    )
    yield db
    db.dispose()


@pytest.fixture
def cell_db(
    compute_backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Database]:
    db = dbs.fresh_migrated_database(
        compute_backend,
        _worker(request),
        tmp_path,
        "_cell",
        migrate.sync_cell,
        cell_schema.metadata,
    )
    yield db
    db.dispose()


@pytest.fixture
def compute_service(api_db: Database, cell_db: Database) -> Iterator[ComputeService]:
    """The compute service with cell1 mapped (no Placement unless ``placement`` is used)."""
    with api_db.write() as conn:
        cells.create_cell(conn, CELL1_UUID, "cell1", cell_db.url, "memory://cell1")
    service = ComputeService(ComputeSettings(), api_db, NoMessages(), NoMessages())
    yield service
    service.cells.dispose()


@pytest.fixture
def cell1(compute_service: ComputeService) -> Cell:
    found = compute_service.cells.cell(CELL1_UUID)
    assert found is not None
    return found


def client_for(service: ComputeService, headers: dict[str, str] | None = None) -> httpx.Client:
    """An in-process client of the compute API (admin unless ``headers`` say otherwise)."""
    app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
    client = httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://compute")
    client.headers.update(headers or ADMIN)
    return client


@pytest.fixture
def compute(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service) as client:
        yield client


@pytest.fixture
def alice(compute_service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(compute_service, ALICE) as client:
        yield client


@pytest.fixture
def placement(
    compute_backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    compute_service: ComputeService,
) -> Iterator[httpx.Client]:
    """A Placement in process, which the compute service now uses; the client is for checks."""
    db = dbs.fresh_database(compute_backend, _worker(request), tmp_path)
    placement_service = make_service(db)
    with wsgi_client(placement_service) as ours, wsgi_client(placement_service) as checks:
        ours.headers["x-auth-token"] = "admin"
        compute_service.placement = PlacementClient(ours)
        checks.headers.update({"x-auth-token": "admin", "openstack-api-version": "placement 1.39"})
        yield checks
    db.dispose()


@dataclass
class Hosts:
    service: ComputeService
    cell_db: Database
    cell: Cell

    def add(
        self,
        host: str,
        *,
        binary: str = "nova-compute",
        topic: str = "compute",
        node: bool = True,
        reported: bool = True,
        resources: dict[str, Any] | None = None,
    ) -> str | None:
        """Register a service on ``host`` (and its compute node): the node's uuid, or None."""
        node_uuid = None
        with self.cell_db.write() as conn:
            row = services.get_or_create(conn, host, binary, topic)
            if reported:
                services.heartbeat(conn, row["id"], utcnow())
            if node:
                made = compute_nodes.upsert(
                    conn,
                    row["id"],
                    host,
                    host,
                    resources or {"vcpus": 8, "memory_mb": 16384, "local_gb": 100},
                )
                node_uuid = made["uuid"]
        with self.service.api_db.write() as conn:
            cells.map_host(conn, host, self.cell.id)
        if node_uuid is not None and self.service.placement is not None:
            self.service.placement.ensure_provider(node_uuid, host)
        return node_uuid


@pytest.fixture
def hosts(compute_service: ComputeService, cell_db: Database, cell1: Cell) -> Hosts:
    return Hosts(compute_service, cell_db, cell1)

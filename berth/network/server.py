"""Serving the Networking API with uvicorn, in one or several worker processes."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

import httpx
import uvicorn
from starlette.types import ASGIApp

from berth import config
from berth.common import startup_objects
from berth.common.asgi import spread_over_workers
from berth.common.db import Database
from berth.common.serving import uvicorn_options
from berth.identity.service_user import service_auth
from berth.identity.strategy import authenticator, require_identity
from berth.network.app import build_app
from berth.network.placement_allocations import PlacementAllocations
from berth.network.placement_sync import PlacementSync
from berth.network.reporter import PlacementReporter
from berth.network.service import NetworkService
from berth.network.store import migrate

LOG = logging.getLogger(__name__)


def service_from_settings(settings: config.Settings) -> NetworkService:
    """The service of one worker; with a Placement URL, a reporter that wakes on every change
    and the client that rewrites allocations when bound ports' QoS requests change.

    Every worker runs its own reporter: passes are idempotent, so several only repeat work."""
    network = settings.network
    service = NetworkService(settings=network, db=Database(settings.network_database_url()))
    if network.placement_url:
        calls = service_auth(
            network.auth_strategy, network.placement_token, settings.keystone_authtoken
        )
        client = httpx.Client(base_url=network.placement_url.rstrip("/"), auth=calls, timeout=30)
        service.reporter = PlacementReporter(
            service.db,
            PlacementSync(client),
            network.placement_sync_interval,
            network.agent_down_time,
        )
        service.on_change.append(service.reporter.wake)
        service.allocations = PlacementAllocations(client)
    return service


def create_app() -> ASGIApp:
    settings = config.load()
    network = settings.network
    app = spread_over_workers(
        build_app(
            service_from_settings(settings),
            authenticator(network.auth_strategy, settings.keystone_authtoken),
        ),
        network.workers,
        network.keepalive_requests,
    )
    startup_objects.freeze()
    return app


def run(settings: config.Settings) -> int:
    require_identity(settings.network.auth_strategy, settings.keystone_authtoken)
    db = Database(settings.network_database_url())
    if migrate.sync(db):
        LOG.info("network schema upgraded to %s", migrate.MIGRATIONS.current(db))
    db.dispose()
    network = settings.network
    LOG.info(
        "network API listening on http://%s:%s with %d worker(s)",
        network.host,
        network.port,
        network.workers,
    )
    signal.signal(signal.SIGTERM, _exit_cleanly)
    uvicorn.run(
        "berth.network.server:create_app",
        factory=True,
        host=network.host,
        port=network.port,
        workers=network.workers,
        **uvicorn_options(settings),
        timeout_graceful_shutdown=10,
    )
    return 0


def _exit_cleanly(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)

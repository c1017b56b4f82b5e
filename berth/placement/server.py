"""Serving the Placement API with uvicorn, in one or several worker processes."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType

import uvicorn
from starlette.types import ASGIApp

from berth import config
from berth.common import startup_objects
from berth.common.serving import uvicorn_options
from berth.identity.strategy import authenticator, require_identity
from berth.placement.app import build_app
from berth.placement.service import PlacementService
from berth.placement.store import migrate
from berth.placement.store.database import open_database

LOG = logging.getLogger(__name__)


def create_app() -> ASGIApp:
    """The app of one worker process, built from the settings in the environment."""
    settings = config.load()
    service = PlacementService.from_settings(settings.placement, settings.placement_database_url())
    app = build_app(
        service, authenticator(settings.placement.auth_strategy, settings.keystone_authtoken)
    )
    startup_objects.freeze()
    return app


def run(settings: config.Settings) -> int:
    require_identity(settings.placement.auth_strategy, settings.keystone_authtoken)
    url = settings.placement_database_url()
    # Upgrade once, in the parent, before any worker serves a request.
    db = open_database(url)
    if migrate.sync(db):
        LOG.info("placement schema upgraded to %s", migrate.current_revision(db))
    db.dispose()
    placement = settings.placement
    LOG.info(
        "placement listening on http://%s:%s with %d worker(s), database %s",
        placement.host,
        placement.port,
        placement.workers,
        db.engine.url.render_as_string(hide_password=True),
    )
    # uvicorn drains in-flight requests on SIGTERM, then re-raises the signal with the handler
    # that was there before it started: make that one a plain, successful exit.
    signal.signal(signal.SIGTERM, _exit_cleanly)
    uvicorn.run(
        "berth.placement.server:create_app",
        factory=True,
        host=placement.host,
        port=placement.port,
        workers=placement.workers,
        **uvicorn_options(settings),
        timeout_graceful_shutdown=10,
    )
    return 0


def _exit_cleanly(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)

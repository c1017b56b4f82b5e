"""What every Berth HTTP API is served with by uvicorn, whichever process serves it."""

from __future__ import annotations

from typing import Any

from berth.common import logs
from berth.config import Settings


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The options of ``uvicorn.run`` or ``uvicorn.Config`` that come from ``settings``: the
    log, and how long an idle kept-alive connection stays open (uvicorn's own 5 s equals the
    openstack CLI's poll interval, so a poll could land on a connection as it closed)."""
    return {
        "log_level": settings.log_level.lower(),
        "log_config": logs.uvicorn_config(settings.log_level),
        "timeout_keep_alive": settings.keepalive_timeout,
    }

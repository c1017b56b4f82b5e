"""How every Berth process writes its log: one plain line per record, on stderr."""

from __future__ import annotations

import logging
from typing import Any

LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


def configure(level: str) -> None:
    """The log of a process that is not served by uvicorn (commands, the parent of workers)."""
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT)


def uvicorn_config(level: str) -> dict[str, Any]:
    """The logging of uvicorn and of its worker processes (each configures itself from this):
    Berth's plain line for every logger, the access log included. Uvicorn's own formatters copy
    each record to colour it, which cost a sixth of a trivial request's time; worker processes
    also get a root handler this way, so Berth's own records (index rebuilds) are written."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"plain": {"format": LOG_FORMAT}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "plain",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level.upper()},
    }

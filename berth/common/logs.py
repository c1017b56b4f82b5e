"""How every Berth process writes its log: one plain line per record, on stderr."""

from __future__ import annotations

import logging
from typing import Any

LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


# Libraries whose every request would be an INFO line: the services' calls to each other over
# HTTP (httpx) and the bus's connection chatter. Their lines are wanted only at DEBUG.
CHATTY = ("httpx", "httpcore", "oslo_messaging", "kombu", "amqp")


def configure(level: str) -> None:
    """The log of a process that is not served by uvicorn (commands, the parent of workers)."""
    # force: a library that set up logging of its own (the embedded Keystone) gives way.
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT, force=True)
    # Internal HTTP and bus traffic at DEBUG only; warnings and errors always.
    if level.upper() != "DEBUG":
        for name in CHATTY:
            logging.getLogger(name).setLevel(logging.WARNING)


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
        "loggers": {
            name: {"level": "DEBUG" if level.upper() == "DEBUG" else "WARNING"} for name in CHATTY
        },
    }

"""``berth up``: start the stack, write clouds.yaml, serve every API on one port until stopped."""

from __future__ import annotations

import logging
import signal
import sys
from pathlib import Path
from types import FrameType

import uvicorn

from berth.allinone.stack import Stack, endpoints, write_clouds_yaml
from berth.common import logs
from berth.compute.host import fleet as fleets
from berth.config import Settings

LOG = logging.getLogger(__name__)

EXAMPLE_FLEET = Path(__file__).resolve().parents[2] / "etc" / "fleet.example.yaml"


def run(
    settings: Settings,
    host: str,
    port: int,
    fleet_path: str | None,
    hosts: int | None = None,
    cells: int = 1,
) -> int:
    defaults = fleets.host_defaults(settings.compute)
    if hosts:
        fleet = fleets.parse(fleets.of_size(hosts, cells), defaults)
    else:
        fleet = fleets.load(Path(fleet_path) if fleet_path else EXAMPLE_FLEET, defaults)
    stack = Stack(settings, fleet)
    stack.start()
    base = f"http://{host}:{port}"
    clouds = settings.data_dir / "clouds.yaml"
    write_clouds_yaml(clouds, endpoints(base))
    LOG.info(
        "every API on %s (/placement, /networking, /compute, /image); clouds.yaml: %s", base, clouds
    )
    print(
        f"berth is up on {base}\nexport OS_CLIENT_CONFIG_FILE={clouds}\nopenstack --os-cloud berth server list"
    )
    signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        uvicorn.run(
            stack.app(),
            host=host,
            port=port,
            log_level=settings.log_level.lower(),
            log_config=logs.uvicorn_config(settings.log_level),
        )
    finally:
        stack.stop()
    return 0


def _exit_cleanly(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)

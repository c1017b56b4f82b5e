"""``berth up``: every service on one port, with a real Keystone at ``/identity`` by default.

The port opens first, answering only the identity service (everything else 503 "starting"). The
hosts register in Placement, and the network service publishes its providers there, while the
embedded Keystone sets itself up (``berth.allinone.identity``): those calls are in process, as
the services themselves, without tokens. Once both are done, the builds the last run left are
ended, every path is served and clouds.yaml is written.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.allinone.identity import EmbeddedIdentity
from berth.allinone.stack import (
    Stack,
    endpoints,
    noauth2_cloud,
    on_one_cpu,
    write_clouds_yaml,
)
from berth.common.dispatch import PrefixDispatcher
from berth.common.serving import uvicorn_options
from berth.compute.host import fleet as fleets
from berth.config import AuthStrategy, Settings

LOG = logging.getLogger(__name__)

EXAMPLE_FLEET = Path(__file__).resolve().parents[2] / "etc" / "fleet.example.yaml"
IDENTITY_PREFIX = "/identity"


def run(
    settings: Settings,
    host: str,
    port: int,
    fleet_path: str | None,
    hosts: int | None = None,
    cells: int = 1,
    auth: AuthStrategy = "keystone",
) -> int:
    defaults = fleets.host_defaults(settings.compute)
    if hosts:
        fleet = fleets.parse(fleets.of_size(hosts, cells), defaults)
    else:
        fleet = fleets.load(Path(fleet_path) if fleet_path else EXAMPLE_FLEET, defaults)
    base = f"http://{host}:{port}"
    apps: dict[str, Any] = {}
    identity: EmbeddedIdentity | None = None
    if auth == "keystone":
        identity = EmbeddedIdentity(
            settings.data_dir / "identity", base + IDENTITY_PREFIX, endpoints(base),
            settings.log_level,
        )  # fmt: skip
        settings = identity.service_settings(settings)
        clouds = identity.clouds()
        apps[IDENTITY_PREFIX] = identity
        identity.start()
    else:
        clouds = {"berth": noauth2_cloud(endpoints(base))}
    stack = Stack(settings, fleet)
    gate = StartingGate(PrefixDispatcher({**apps, **stack.app_routes()}), open_paths=tuple(apps))
    server = uvicorn.Server(
        uvicorn.Config(
            gate,
            host=host,
            port=port,
            **uvicorn_options(settings),
        )
    )
    clouds_file = settings.data_dir / "clouds.yaml"
    started = threading.Event()

    def start_stack() -> None:
        try:
            # Needs neither the port nor Keystone: Placement is called in process.
            stack.register()
            if identity is not None:
                identity.wait()
            # The services fetch their tokens from the Keystone on the port.
            while not server.started:
                if server.should_exit:
                    return
                time.sleep(0.05)
            stack.serve()
        except Exception:
            LOG.exception("berth up could not start; stopping")
            server.should_exit = True
            return
        write_clouds_yaml(clouds_file, clouds)
        gate.ready = True
        started.set()
        LOG.info("every API on %s; clouds.yaml: %s", base, clouds_file)
        # Without Keystone the CLI's identity-based commands (server list among them) fail.
        first = "\nopenstack --os-cloud berth server list" if auth == "keystone" else ""
        print(
            f"berth is up on {base} (capacity view: {base}/dashboard)\n"
            f"export OS_CLIENT_CONFIG_FILE={clouds_file}{first}",
            flush=True,
        )
        on_one_cpu(settings)

    signal.signal(signal.SIGTERM, _exit_cleanly)
    threading.Thread(target=start_stack, name="berth up start", daemon=True).start()
    try:
        server.run()
    finally:
        stack.stop()
    return 0 if started.is_set() else 1


class StartingGate:
    """Until ``ready``, only ``open_paths`` are served; every other request is answered 503 with
    a Retry-After, so that clients wait for the whole cloud rather than half of it."""

    def __init__(self, app: ASGIApp, open_paths: tuple[str, ...]) -> None:
        self.app = app
        self.open_paths = open_paths
        self.ready = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.ready and not self._open(scope["path"]):
            starting = {"message": "Berth is starting; try again in a moment."}
            await JSONResponse(starting, 503, headers={"retry-after": "1"})(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _open(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.open_paths)


def _exit_cleanly(_signum: int, _frame: FrameType | None) -> None:
    sys.exit(0)

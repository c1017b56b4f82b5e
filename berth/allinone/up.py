"""``berth up``: every service on one port, with a real Keystone at ``/identity`` by default.

The port opens first, answering only the identity service (everything else 503 "starting"): the
services validate tokens with that Keystone over HTTP, and starting the stack already calls them
(hosts register in Placement, the network service publishes its providers). Once the stack has
started, every path is served and clouds.yaml is written.
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

import httpx
import uvicorn
from a2wsgi import WSGIMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.allinone.stack import (
    Stack,
    endpoints,
    keystone_cloud,
    noauth2_cloud,
    write_clouds_yaml,
)
from berth.common import logs
from berth.common.dispatch import PrefixDispatcher
from berth.compute.host import fleet as fleets
from berth.config import AuthStrategy, KeystoneAuthtokenSettings, Settings
from berth.identity import embedded
from berth.identity.accounts import ensure_accounts

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
    clouds: dict[str, dict[str, Any]]
    if auth == "keystone":
        settings, keystone_app, clouds = _with_identity(settings, base)
        apps[IDENTITY_PREFIX] = keystone_app
    else:
        clouds = {"berth": noauth2_cloud(endpoints(base))}
    stack = Stack(settings, fleet)
    gate = StartingGate(PrefixDispatcher({**apps, **stack.app_routes()}), open_paths=tuple(apps))
    server = uvicorn.Server(
        uvicorn.Config(
            gate,
            host=host,
            port=port,
            log_level=settings.log_level.lower(),
            log_config=logs.uvicorn_config(settings.log_level),
        )
    )
    clouds_file = settings.data_dir / "clouds.yaml"
    started = threading.Event()

    def start_stack() -> None:
        while not server.started:
            if server.should_exit:
                return
            time.sleep(0.05)
        try:
            stack.start()
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

    signal.signal(signal.SIGTERM, _exit_cleanly)
    threading.Thread(target=start_stack, name="berth up start", daemon=True).start()
    try:
        server.run()
    finally:
        stack.stop()
    return 0 if started.is_set() else 1


def _with_identity(
    settings: Settings, base: str
) -> tuple[Settings, ASGIApp, dict[str, dict[str, Any]]]:
    """The embedded Keystone, set up and holding the accounts and catalog; the settings that
    make every service validate its tokens and call the others as its service user; and the
    clouds of clouds.yaml (``berth`` the admin, ``berth-demo`` a member, ``berth-reader``)."""
    identity_url = base + IDENTITY_PREFIX
    home = embedded.KeystoneHome(settings.data_dir / "identity")
    passwords = embedded.prepare(home, identity_url)
    flask_app = embedded.wsgi_app(home, lambda: logs.configure(settings.log_level))
    with httpx.Client(
        transport=httpx.WSGITransport(app=flask_app, script_name=IDENTITY_PREFIX),
        base_url="http://identity.local",
    ) as client:
        catalog = {"identity": identity_url, **endpoints(base)}
        ensure_accounts(client, passwords, catalog, home.accounts_stamp)
    keystone = KeystoneAuthtokenSettings(
        www_authenticate_uri=identity_url,
        auth_url=identity_url,
        username=embedded.SERVICE_USER,
        password=passwords[embedded.SERVICE_USER],
        project_name=embedded.SERVICE_PROJECT,
        region_name=embedded.REGION,
    )
    settings = settings.model_copy(
        update={
            "keystone_authtoken": keystone,
            **{
                name: getattr(settings, name).model_copy(update={"auth_strategy": "keystone"})
                for name in ("placement", "network", "compute")
            },
        }
    )
    clouds = {
        "berth": keystone_cloud(identity_url, embedded.ADMIN, passwords[embedded.ADMIN], "admin"),
        "berth-demo": keystone_cloud(identity_url, "demo", passwords["demo"], "demo"),
        "berth-reader": keystone_cloud(
            identity_url, "demo-reader", passwords["demo-reader"], "demo"
        ),
    }
    return settings, WSGIMiddleware(flask_app), clouds


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

"""The embedded Keystone of ``berth up``, set up beside the rest of the cloud's start.

Its first set-up (schema, keys, bootstrap, then the accounts and catalog) takes seconds, and
the stack's start needs none of it: the hosts register with Placement in process, as the
services themselves (``berth.common.auth.caller``). So the set-up runs in a thread while the
hosts register, and ``/identity`` answers 503 until it is done; ``berth up`` opens the rest of
the cloud only once both are.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import httpx
from a2wsgi import WSGIMiddleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.allinone.stack import keystone_cloud
from berth.common import logs
from berth.config import KeystoneAuthtokenSettings, Settings
from berth.identity import accounts, embedded


class IdentityFailed(Exception):
    """The embedded Keystone could not be set up; the cause is chained."""


class EmbeddedIdentity:
    """The embedded Keystone at ``url``, its files in ``home``: an ASGI app that answers 503
    until :meth:`set_up` has run, then Keystone's own."""

    def __init__(self, home: Path, url: str, catalog: dict[str, str], log_level: str) -> None:
        self.home = embedded.KeystoneHome(home)
        self.url = url
        self.catalog = {"identity": url, **catalog}
        self.log_level = log_level
        self.home.write_config()
        # Known before Keystone runs: the services' settings and clouds.yaml need them.
        self.passwords = self.home.passwords()
        self._app: ASGIApp | None = None
        self._done = threading.Event()
        self._failure: BaseException | None = None

    def service_settings(self, settings: Settings) -> Settings:
        """``settings`` with every service validating tokens with this Keystone and calling the
        others as its service user."""
        keystone = KeystoneAuthtokenSettings(
            www_authenticate_uri=self.url,
            auth_url=self.url,
            username=embedded.SERVICE_USER,
            password=self.passwords[embedded.SERVICE_USER],
            project_name=embedded.SERVICE_PROJECT,
            region_name=embedded.REGION,
        )
        return settings.model_copy(
            update={
                "keystone_authtoken": keystone,
                **{
                    name: getattr(settings, name).model_copy(update={"auth_strategy": "keystone"})
                    for name in ("placement", "network", "compute")
                },
            }
        )

    def clouds(self) -> dict[str, dict[str, Any]]:
        """clouds.yaml's clouds: ``berth`` the admin, ``berth-demo`` a member, ``berth-reader``."""
        passwords = self.passwords
        return {
            "berth": keystone_cloud(self.url, embedded.ADMIN, passwords[embedded.ADMIN], "admin"),
            "berth-demo": keystone_cloud(self.url, "demo", passwords["demo"], "demo"),
            "berth-reader": keystone_cloud(
                self.url, "demo-reader", passwords["demo-reader"], "demo"
            ),
        }

    def start(self) -> None:
        """:meth:`set_up` in a thread of its own, which then stays: importing Keystone makes
        greenlets (eventlet's) that belong to the importing thread, and once that thread has
        ended they can no longer be freed (berth up crashed in a later garbage collection, or
        hung as the thread ended)."""
        threading.Thread(target=self._set_up_and_stay, name="identity", daemon=True).start()

    def _set_up_and_stay(self) -> None:
        # A failure is kept for wait(), which raises it where berth up waits.
        with contextlib.suppress(BaseException):
            self.set_up()
        threading.Event().wait()

    def set_up(self) -> None:
        """Schema, keys and bootstrap (once per data directory), the accounts and the catalog;
        then Keystone answers. A failure is kept for :meth:`wait`."""
        try:
            embedded.prepare(self.home, self.url)

            def keystone_app() -> Any:
                return embedded.wsgi_app(self.home, lambda: logs.configure(self.log_level))

            if accounts.ensured(self.passwords, self.catalog, self.home.accounts_stamp):
                flask_app = keystone_app()
            else:
                # The password hashes and API calls in a child, while this process makes the
                # app it serves: it has the fleet to register meanwhile.
                job = {"home": str(self.home.root), "script_name": self.url_path,
                       "passwords": self.passwords, "catalog": self.catalog}  # fmt: skip
                flask_app = embedded.in_child(
                    {"accounts": job}, "making the identity accounts", keystone_app
                )
            self._app = WSGIMiddleware(flask_app)
        except BaseException as exc:
            self._failure = exc
            raise
        finally:
            self._done.set()

    def wait(self) -> None:
        """Until :meth:`set_up` has ended; IdentityFailed if it failed."""
        self._done.wait()
        if self._failure is not None:
            raise IdentityFailed("the identity service could not be set up") from self._failure

    @property
    def url_path(self) -> str:
        return httpx.URL(self.url).path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app
        if app is None:
            if scope["type"] != "http":
                return
            starting = {"message": "The identity service is starting; try again in a moment."}
            await JSONResponse(starting, 503, headers={"retry-after": "1"})(scope, receive, send)
            return
        await app(scope, receive, send)

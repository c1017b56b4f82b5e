"""One port for every service: requests go to the app whose path prefix they start with."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.common.asgi import lifespan


class PrefixDispatcher:
    """``/placement/...`` to Placement, ``/compute/...`` to Compute, and so on; the app sees the
    rest of the path, and the prefix as its ``root_path`` (so its links carry it)."""

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self.apps = dict(apps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            # The stack starts and stops the services; nothing to do per app.
            await lifespan(receive, send)
            return
        path = scope["path"]
        for prefix, app in self.apps.items():
            if path == prefix or path.startswith(prefix + "/"):
                inner = dict(scope)
                inner["root_path"] = scope.get("root_path", "") + prefix
                inner["path"] = path[len(prefix) :] or "/"
                inner["raw_path"] = inner["path"].encode()
                await app(inner, receive, send)
                return
        listing = {name.strip("/"): f"{name}/" for name in self.apps}
        await JSONResponse({"services": listing}, status_code=404 if path != "/" else 200)(
            scope, receive, send
        )

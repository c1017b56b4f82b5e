"""Small pieces every Berth ASGI app shares: the path it routes on, and the lifespan protocol."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.types import Receive, Scope, Send

Hook = Callable[[], Awaitable[None]]


def routed_path(scope: Scope) -> str:
    """The request's path below the app's mount point (servers that put the mount point in
    ``root_path`` differ on whether ``path`` still holds it)."""
    path: str = scope["path"]
    root_path: str = scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :] or "/"
    return path


async def lifespan(
    receive: Receive, send: Send, startup: Hook | None = None, shutdown: Hook | None = None
) -> None:
    """Answer the ASGI lifespan messages, running the app's hooks on the way."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            if startup is not None:
                await startup()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if shutdown is not None:
                await shutdown()
            await send({"type": "lifespan.shutdown.complete"})
            return

"""The capacity view's ASGI app, mounted at ``/dashboard`` by ``berth up``: the page (plain
HTML, CSS and JavaScript shipped with the package) and the small JSON API it reads.

The page itself holds no data and is served to anyone; every ``/api/`` read but ``config``
takes a token (``X-Auth-Token``, validated as the Compute API validates it) and the Compute
policy rule of the API that shows the same data: the hosts and their servers
``os_compute_api:os-hypervisors:list-detail``, the scheduling decisions
``os_compute_api:os-berth-diagnosis:show`` (both admin-only by default). Read-only: it answers
GET and nothing else.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from berth.common import asgi, auth, routing
from berth.common.context import RequestContext
from berth.compute import exceptions
from berth.compute.server_views import from_instance
from berth.dashboard import listing
from berth.dashboard.sources import FleetReader

LOG = logging.getLogger(__name__)

HOSTS_RULE = "os_compute_api:os-hypervisors:list-detail"
DECISIONS_RULE = "os_compute_api:os-berth-diagnosis:show"
DEFAULT_DECISIONS = 20
MAX_DECISIONS = 200
_STATIC = resources.files("berth.dashboard") / "static"
_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}
_STATIC_NAME = re.compile(r"^[a-z][a-z0-9-]*\.(css|js)$")


@dataclass(frozen=True)
class PageConfig:
    """What the page needs to know to log in and to reach the Compute API (paths on this
    port): ``identity`` is the Keystone v3 root with ``auth_strategy = keystone``, else None
    (noauth2: the page asks for a token as is)."""

    identity: str | None
    compute: str
    image: str


@dataclass(frozen=True)
class Call:
    request: Request
    context: RequestContext
    params: dict[str, str]


Handler = Callable[["DashboardApp", Call], Response]


class DashboardApp:
    def __init__(
        self,
        reader: FleetReader,
        authenticate: auth.Authenticator,
        authorize: Callable[[RequestContext, str], None],
        config: PageConfig,
    ) -> None:
        self.reader = reader
        self.authenticate = authenticate
        self.authorize = authorize
        self.config = config
        self.router: routing.Router[Handler] = routing.Router(_ROUTES)
        self.threads = asgi.HandlerThreads("dashboard", threads=4)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await asgi.lifespan(receive, send)
            return
        request = Request(scope, receive)
        response = await self._respond(request, asgi.routed_path(scope), scope)
        await response(scope, receive, send)

    async def _respond(self, request: Request, path: str, scope: Scope) -> Response:
        if request.method in ("GET", "HEAD") and path in ("/", ""):
            return _page(scope.get("root_path", ""))
        if request.method in ("GET", "HEAD") and path.startswith("/static/"):
            return _static(path.removeprefix("/static/"))
        if request.method == "GET" and path == "/api/config":
            return _json(self._page_config())
        request_id = f"req-{uuid.uuid4()}"
        try:
            handler, params = self.router.match(request.method, path)
            context = await self.authenticate(request.headers, request_id)
            return await self.threads.run(handler, self, Call(request, context, params))
        except auth.Unauthenticated as exc:
            return _error(401, str(exc), exc.headers)
        except routing.MethodNotAllowed as exc:
            return _error(405, str(exc), {"allow": ", ".join(exc.allowed)})
        except routing.NoRoute:
            return _error(404, f"The dashboard has no {path}.")
        except listing.BadQuery as exc:
            return _error(400, str(exc))
        except exceptions.ComputeError as exc:
            return _error(exc.status, str(exc))
        except auth.IdentityUnavailable as exc:
            return _error(503, str(exc))
        except Exception as exc:  # answered in the API's error format, logged with its id
            asgi.log_failure(LOG, request_id, exc, 500)
            return _error(500, f"An unexpected error occurred ({request_id}); see the log.")

    def _page_config(self) -> dict[str, Any]:
        """``{"auth": "keystone" | "noauth2", "identity": "/identity/v3" | null,
        "compute": "/compute/v2.1", "image": "/image"}``"""
        return {
            "auth": "keystone" if self.config.identity else "noauth2",
            "identity": self.config.identity,
            "compute": self.config.compute,
            "image": self.config.image,
        }

    # -- the API -------------------------------------------------------------------------------

    def hosts(self, call: Call) -> Response:
        """``{"hosts": [row...], "total": 1000, "page": 1, "per_page": 50, "pages": 20,
        "sort": "-vcpu", "totals": {"VCPU": {"used": 8, "capacity": 512}, ...},
        "cells": ["cell1", ...], "aggregates": [...], "physnets": [...]}``; the rows as
        ``fleet.HostRow.to_json`` shows them."""
        self.authorize(call.context, HOSTS_RULE)
        query = listing.HostQuery.parse(call.request.query_params.multi_items())
        rows = self.reader.hosts()
        page = listing.select(rows, query)
        return _json(
            {
                **page.to_json(),
                "cells": sorted({row.node.cell for row in rows}),
                "aggregates": sorted({a for row in rows for a in row.aggregates}),
                "physnets": sorted({p for row in rows for p in row.physnets}),
            }
        )

    def servers(self, call: Call) -> Response:
        """``{"host": "cn1", "servers": [{"id", "name", "status", "project_id", "flavor":
        {"name", "vcpus", "ram", "disk"}, "created"}]}``; 404 for a host no cell has."""
        self.authorize(call.context, HOSTS_RULE)
        host = call.params["host"]
        rows = self.reader.servers_on(host)
        if rows is None:
            raise exceptions.NotFound(f"No cell has a host named {host!r}.")
        return _json({"host": host, "servers": [_transform_server(row) for row in rows]})

    def decisions(self, call: Call) -> Response:
        """``{"decisions": [...]}``, newest first (``decisions.Decision.to_json``)."""
        self.authorize(call.context, DECISIONS_RULE)
        limit = _limit(call.request.query_params.multi_items())
        return _json({"decisions": [d.to_json() for d in self.reader.decisions(limit)]})


_ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/api/hosts": {"GET": DashboardApp.hosts},
    "/api/hosts/{host}/servers": {"GET": DashboardApp.servers},
    "/api/decisions": {"GET": DashboardApp.decisions},
}


def _limit(items: list[tuple[str, str]]) -> int:
    values = dict(items)
    unknown = set(values) - {"limit"}
    if unknown:
        raise listing.BadQuery(f"Unknown query parameter {sorted(unknown)[0]!r}; known: limit.")
    text = values.get("limit") or str(DEFAULT_DECISIONS)
    if not text.isdigit() or not 1 <= int(text) <= MAX_DECISIONS:
        raise listing.BadQuery(
            f"Query parameter 'limit' must be 1 to {MAX_DECISIONS}, not {text!r}."
        )
    return int(text)


def _transform_server(row: Mapping[str, Any]) -> dict[str, Any]:
    server = from_instance(row, 0)  # type: ignore[arg-type]
    flavor = server.flavor
    return {
        "id": server.uuid,
        "name": server.name,
        "status": server.status,
        "project_id": server.project_id,
        "flavor": {
            "name": flavor.get("name"),
            "vcpus": flavor.get("vcpus"),
            "ram": flavor.get("memory_mb"),
            "disk": flavor.get("root_gb"),
        },
        "created": server.created_at,
    }


def _page(root_path: str) -> Response:
    # The page's links are relative to its base, which is wherever the app is mounted.
    html = (_STATIC / "index.html").read_text().replace("{{BASE}}", root_path.rstrip("/") + "/")
    return Response(html, media_type=_CONTENT_TYPES[".html"], headers=_NO_STORE)


def _static(name: str) -> Response:
    resource = _STATIC / name
    if not _STATIC_NAME.match(name) or not resource.is_file():
        return _error(404, f"The dashboard has no file {name!r}.")
    suffix = name[name.rindex(".") :]
    return Response(resource.read_bytes(), media_type=_CONTENT_TYPES[suffix], headers=_NO_STORE)


# The page and its data change with Berth and the fleet: never served from a cache.
_NO_STORE = {"cache-control": "no-store"}


def _json(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body, option=orjson.OPT_NAIVE_UTC | orjson.OPT_UTC_Z),
        status_code=status,
        media_type="application/json",
        headers={**_NO_STORE, **(headers or {})},
    )


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return _json({"error": {"code": status, "message": message}}, status, headers)

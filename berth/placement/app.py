"""The Placement ASGI application: request id, authentication, microversion, routing, faults."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from berth.common import asgi, auth
from berth.common.body import read_body
from berth.common.openapi import DescriptionServer
from berth.placement import microversion
from berth.placement.api import faults
from berth.placement.api.openapi import DESCRIPTION
from berth.placement.api.request import HTTPError, PlacementRequest, accepts_json
from berth.placement.api.router import Router
from berth.placement.api.routes import ROUTES
from berth.placement.service import PlacementService

LOG = logging.getLogger(__name__)
ROOT_PATHS = ("", "/")


class PlacementApp:
    """A pure ASGI app; handlers run in worker threads because storage is synchronous."""

    def __init__(
        self,
        service: PlacementService,
        authenticate: auth.Authenticator = auth.noauth2_authenticator,
    ) -> None:
        self.service = service
        self.authenticate = authenticate
        self.router = Router(ROUTES)
        self.threads = asgi.HandlerThreads("placement-api")
        self.description = DescriptionServer(DESCRIPTION)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.description.serves(scope):
            await self.description.respond(scope, send)
            return
        request = Request(scope, receive)
        response = await self._respond(request)
        await response(scope, receive, send)

    async def _respond(self, request: Request) -> Response:
        request_id = f"req-{uuid.uuid4()}"
        headers = request.headers
        version: microversion.Version | None = None
        try:
            # As ``request.url.path`` has it, without building the whole URL for every request.
            path = (
                request.scope["path"].replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")
            )
            context = (
                await auth.caller(request.scope, headers, request_id, self.authenticate)
                if path not in ROOT_PATHS
                else None
            )
            version = microversion.negotiate(headers)
            handler, params = self.router.match(request.method, path)
            # Only reads are refused for their Accept header; a write is validated first.
            if (
                request.method == "GET"
                and path not in ROOT_PATHS
                and not accepts_json(headers.get("accept"))
            ):
                raise HTTPError(406, "Only application/json is provided")
            body = await read_body(request)
            req = PlacementRequest(
                method=request.method,
                path=path,
                path_params=params,
                query_items=request.query_params.multi_items(),
                headers=headers,
                body=body,
                version=version,
                context=context or auth.anonymous(request_id),
                service=self.service,
                base_url=lambda: str(request.base_url),
            )
            response = await self.threads.run(handler, req)
        except auth.Unauthenticated as exc:
            response = faults.error_response(
                HTTPError(401, str(exc), headers=exc.headers),
                request_id,
                None,
                headers.get("accept"),
            )
        except microversion.VersionError as exc:
            response = faults.error_response(
                HTTPError(exc.status, str(exc)), request_id, None, headers.get("accept")
            )
        except ClientDisconnect:
            return asgi.client_gone(LOG, request_id)
        except Exception as exc:  # every failure is answered in the API's error format
            error = faults.from_exception(exc)
            asgi.log_failure(LOG, request_id, exc, error.status)
            response = faults.error_response(error, request_id, version, headers.get("accept"))
        response.headers["x-openstack-request-id"] = request_id
        if version is not None:
            response.headers["openstack-api-version"] = microversion.header_value(version)
            response.headers["vary"] = "openstack-api-version"
        return response

    def _load_index(self) -> None:
        try:
            self.service.index.refresh()
        except Exception:  # the first query will try again; a worker still serves the rest
            LOG.exception("could not load the candidate index at start-up")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Before the first request, so no client waits for a large index to load.
                await self.threads.run(self._load_index)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.service.db.dispose()
                await send({"type": "lifespan.shutdown.complete"})
                return


class _CORS(CORSMiddleware):
    """Starlette's CORS, answering a refused preflight as OpenStack services do.

    A preflight from an origin (or with a method or header) that is not allowed gets a plain 200
    without any ``Access-Control-Allow-*`` header, which the browser treats as a refusal, rather
    than Starlette's 400.
    """

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 400:
            return PlainTextResponse("", status_code=200)
        return response


def build_app(
    service: PlacementService, authenticate: auth.Authenticator = auth.noauth2_authenticator
) -> ASGIApp:
    app: Any = PlacementApp(service, authenticate)
    origins = service.settings.cors_allowed_origins
    if origins:
        app = _CORS(
            app,
            allow_origins=origins,
            allow_methods=["GET", "PUT", "POST", "DELETE", "PATCH"],
            allow_headers=["*"],
            expose_headers=["openstack-api-version", "x-openstack-request-id"],
        )
    return asgi.spread_over_workers(
        app, service.settings.workers, service.settings.keepalive_requests
    )

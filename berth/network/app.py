"""The Networking ASGI application: request id, authentication, routing, NeutronError faults."""

from __future__ import annotations

import logging
import uuid

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from berth.common import asgi, auth, routing
from berth.common.body import read_body
from berth.common.openapi import DescriptionServer
from berth.common.validation import guarded
from berth.network import exceptions
from berth.network.api import faults
from berth.network.api.openapi import DESCRIPTION
from berth.network.api.request import NetworkRequest, check_body
from berth.network.api.routes import ROUTES, Handler
from berth.network.api.schemas.bodies import BODIES
from berth.network.service import NetworkService

LOG = logging.getLogger(__name__)


class NetworkApp:
    """A pure ASGI app; handlers run in worker threads because storage is synchronous."""

    def __init__(
        self, service: NetworkService, authenticate: auth.Authenticator = auth.noauth2_authenticator
    ) -> None:
        self.service = service
        self.authenticate = authenticate
        self.router: routing.Router[Handler] = routing.Router(guarded(ROUTES, BODIES, check_body))
        self.threads = asgi.HandlerThreads("network-api")
        self.description = DescriptionServer(DESCRIPTION)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if self.description.serves(scope):
            await self.description.respond(scope, send)
            return
        request = Request(scope, receive)
        response = await self._respond(request, scope)
        await response(scope, receive, send)

    async def _respond(self, request: Request, scope: Scope) -> Response:
        request_id = f"req-{uuid.uuid4()}"
        path = asgi.routed_path(scope)
        try:
            context = (
                await auth.caller(scope, request.headers, request_id, self.authenticate)
                if path != "/"
                else auth.anonymous(request_id)
            )
            handler, params = self.router.match(request.method, path)
            req = NetworkRequest(
                method=request.method,
                path=path,
                path_params=params,
                query_items=request.query_params.multi_items(),
                body=await read_body(request),
                context=context,
                service=self.service,
                base_url=str(request.base_url).rstrip("/"),
            )
            response = await self.threads.run(handler, req)
        except auth.Unauthenticated as exc:
            response = faults.error_response(exceptions.Unauthorized(str(exc)), exc.headers)
        except routing.MethodNotAllowed as exc:
            response = faults.error_response(
                exceptions.MethodNotAllowed(str(exc)), headers={"allow": ", ".join(exc.allowed)}
            )
        except routing.NoRoute:
            response = faults.error_response(
                exceptions.NotFound("The resource could not be found.")
            )
        except ClientDisconnect:
            return asgi.client_gone(LOG, request_id)
        except Exception as exc:  # every failure is answered in the API's error format
            refusal = faults.as_refusal(exc)
            asgi.log_failure(LOG, request_id, exc, refusal.status)
            response = faults.error_response(refusal)
        response.headers["x-openstack-request-id"] = request_id
        return response

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        reporter = self.service.reporter

        async def start() -> None:
            if reporter is not None:
                reporter.start()
                reporter.wake()

        async def stop() -> None:
            if reporter is not None:
                await self.threads.run(reporter.stop)

        await asgi.lifespan(receive, send, start, stop)


def build_app(
    service: NetworkService, authenticate: auth.Authenticator = auth.noauth2_authenticator
) -> NetworkApp:
    return NetworkApp(service, authenticate)

"""The Compute ASGI application: request id, authentication, microversion, routing, faults."""

from __future__ import annotations

import logging
import uuid

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from berth.common import asgi, auth, routing
from berth.common.body import BodyTooLarge, read_body
from berth.common.db import UNAVAILABLE, is_unavailable, is_unstorable
from berth.common.openapi import DescriptionServer
from berth.common.validation import guarded
from berth.compute import exceptions
from berth.compute.api import microversion
from berth.compute.api.openapi import DESCRIPTION
from berth.compute.api.request import JSON, ComputeRequest, check_body, dumps, error_document
from berth.compute.api.routes import ROUTES, Handler
from berth.compute.api.schemas.bodies import BODIES
from berth.compute.clients.image import credentials
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)
_ANONYMOUS = ("/", "/v2", "/v2.1")


class ComputeApp:
    """A pure ASGI app; handlers run in worker threads because storage is synchronous."""

    def __init__(
        self, service: ComputeService, authenticate: auth.Authenticator = auth.noauth2_authenticator
    ) -> None:
        self.service = service
        self.authenticate = authenticate
        self.router: routing.Router[Handler] = routing.Router(guarded(ROUTES, BODIES, check_body))
        self.threads = asgi.HandlerThreads("compute-api")
        self.description = DescriptionServer(DESCRIPTION)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await asgi.lifespan(receive, send)
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
        version = None
        try:
            anonymous = path.rstrip("/") in ("", *_ANONYMOUS)
            context = (
                auth.anonymous(request_id)
                if anonymous
                else await auth.caller(scope, request.headers, request_id, self.authenticate)
            )
            version = microversion.negotiate(request.headers)
            handler, params = self.router.match(request.method, path)
            req = ComputeRequest(
                method=request.method,
                path=path,
                path_params=params,
                query_items=request.query_params.multi_items(),
                body=await read_body(request),
                context=context,
                version=version,
                service=self.service,
                base_url=str(request.base_url).rstrip("/"),
                credentials=credentials(request.headers),
            )
            response = await self.threads.run(handler, req)
        except auth.Unauthenticated as exc:
            response = _error(exceptions.Unauthorized(str(exc)), exc.headers)
        except routing.MethodNotAllowed as exc:
            response = _error(
                exceptions.MethodNotAllowed(str(exc)), {"allow": ", ".join(exc.allowed)}
            )
        except routing.NoRoute:
            response = _error(exceptions.NotFound("The resource could not be found."))
        except ClientDisconnect:
            return asgi.client_gone(LOG, request_id)
        except Exception as exc:  # every failure is answered in the API's error format
            refusal = _as_refusal(exc)
            asgi.log_failure(LOG, request_id, exc, refusal.status)
            response = _error(refusal)
        response.headers["x-openstack-request-id"] = request_id
        response.headers["x-compute-request-id"] = request_id
        if version is not None:
            response.headers.update(microversion.headers_for(version))
        return response


def _as_refusal(exc: Exception) -> exceptions.ComputeError:
    if isinstance(exc, exceptions.ComputeError):
        return exc
    if isinstance(exc, BodyTooLarge):
        return exceptions.OverLimit(str(exc))
    if is_unstorable(exc):
        LOG.info("refused a value the database cannot store: %s", getattr(exc, "orig", exc))
        return exceptions.BadRequest("The request holds a value the database cannot store.")
    if is_unavailable(exc):
        return exceptions.ServiceUnavailable(UNAVAILABLE)
    if isinstance(exc, auth.IdentityUnavailable):
        return exceptions.ServiceUnavailable(str(exc))
    return exceptions.ComputeError("An unexpected error occurred; the server log has the details.")


def _error(error: exceptions.ComputeError, headers: dict[str, str] | None = None) -> Response:
    return Response(
        dumps(error_document(error)), status_code=error.status, media_type=JSON, headers=headers
    )


def build_app(
    service: ComputeService, authenticate: auth.Authenticator = auth.noauth2_authenticator
) -> ComputeApp:
    return ComputeApp(service, authenticate)

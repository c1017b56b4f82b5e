"""The Image v2 ASGI application: request id, authentication, routing, Glance-style errors."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Iterator

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from berth.common import asgi, auth, routing
from berth.common.body import BodyTooLarge, read_body
from berth.common.db import UNAVAILABLE, Database, is_unavailable, is_unstorable
from berth.common.openapi import DescriptionServer
from berth.common.validation import guarded
from berth.image import data, errors
from berth.image.api import JSON, ROUTES, STREAMED, Handler, ImageRequest, dumps
from berth.image.openapi import DESCRIPTION
from berth.image.schemas import BODIES, check_body

LOG = logging.getLogger(__name__)
_ANONYMOUS = ("/", "/versions")
# Glance's default image_size_cap: 1 TiB.
DEFAULT_SIZE_CAP = 1024**4


class ImageApp:
    """A pure ASGI app over the compute API database and a data store; handlers run in worker
    threads."""

    def __init__(
        self,
        db: Database,
        store: data.DataStore,
        authenticate: auth.Authenticator = auth.noauth2_authenticator,
        size_cap: int = DEFAULT_SIZE_CAP,
    ) -> None:
        self.db = db
        self.store = store
        self.size_cap = size_cap
        self.authenticate = authenticate
        self.router: routing.Router[Handler] = routing.Router(guarded(ROUTES, BODIES, check_body))
        self.threads = asgi.HandlerThreads("image-api")
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
        try:
            anonymous = (path.rstrip("/") or "/") in _ANONYMOUS
            context = (
                auth.anonymous(request_id)
                if anonymous
                else await auth.caller(scope, request.headers, request_id, self.authenticate)
            )
            handler, params = self.router.match(request.method, path)
            streamed = handler in STREAMED
            req = ImageRequest(
                method=request.method,
                path=path,
                path_params=params,
                query_items=request.query_params.multi_items(),
                headers=request.headers,
                body=b"" if streamed else await read_body(request),
                context=context,
                db=self.db,
                store=self.store,
                size_cap=self.size_cap,
                base_url=str(request.base_url).rstrip("/"),
            )
            if streamed:
                req.chunks = _arriving(request.stream(), asyncio.get_running_loop())
            response = await self.threads.run(handler, req)
        except auth.Unauthenticated as exc:
            response = _error(errors.Unauthorized(str(exc)), exc.headers)
        except routing.MethodNotAllowed as exc:
            response = _error(errors.MethodNotAllowed(str(exc)), {"allow": ", ".join(exc.allowed)})
        except routing.NoRoute:
            response = _error(errors.NotFound("The resource could not be found."))
        except ClientDisconnect:
            return asgi.client_gone(LOG, request_id)
        except Exception as exc:  # every failure is answered in the API's error format
            refusal = _as_refusal(exc)
            asgi.log_failure(LOG, request_id, exc, refusal.status)
            response = _error(refusal)
        response.headers["x-openstack-request-id"] = request_id
        return response


def _as_refusal(exc: Exception) -> errors.ImageError:
    if isinstance(exc, errors.ImageError):
        return exc
    if isinstance(exc, BodyTooLarge | data.TooLarge):
        return errors.RequestEntityTooLarge(str(exc))
    if is_unstorable(exc):
        LOG.info("refused a value the database cannot store: %s", getattr(exc, "orig", exc))
        return errors.BadRequest("The request holds a value the database cannot store.")
    if is_unavailable(exc):
        return errors.ServiceUnavailable(UNAVAILABLE)
    if isinstance(exc, auth.IdentityUnavailable):
        return errors.ServiceUnavailable(str(exc))
    return errors.ImageError("An unexpected error occurred; the server log has the details.")


def _error(error: errors.ImageError, headers: dict[str, str] | None = None) -> Response:
    body = {"message": str(error), "code": error.code, "title": error.title}
    return Response(dumps(body), status_code=error.status, media_type=JSON, headers=headers)


def _arriving(stream: AsyncIterator[bytes], loop: asyncio.AbstractEventLoop) -> Iterator[bytes]:
    """The body's chunks for a handler thread, each received on the app's event loop when the
    handler asks for it: an upload is never held whole."""
    while True:
        try:
            chunk = asyncio.run_coroutine_threadsafe(anext(stream), loop).result()
        except StopAsyncIteration:
            return
        if chunk:
            yield chunk


def build_app(
    db: Database,
    store: data.DataStore,
    authenticate: auth.Authenticator = auth.noauth2_authenticator,
    size_cap: int = DEFAULT_SIZE_CAP,
) -> ImageApp:
    """The image API over ``db``, the compute API database (already at its newest schema), with
    image data in ``store`` up to ``size_cap`` bytes an image."""
    return ImageApp(db, store, authenticate, size_cap)

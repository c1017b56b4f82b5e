"""Every failure becomes a ``NeutronError`` document, in one place, so handlers have no try/except.

{"NeutronError": {"type": "NetworkNotFound", "message": "Network x could not be found.",
                  "detail": ""}}
"""

from __future__ import annotations

import logging

from starlette.responses import Response

from berth.common.auth import IdentityUnavailable
from berth.common.body import BodyTooLarge
from berth.common.db import UNAVAILABLE, is_unavailable, is_unstorable
from berth.network import exceptions
from berth.network.api.request import JSON, dumps, refusal_document

LOG = logging.getLogger(__name__)


def as_refusal(exc: Exception) -> exceptions.NetworkServiceError:
    if isinstance(exc, exceptions.NetworkServiceError):
        return exc
    if is_unavailable(exc):
        return exceptions.ServiceUnavailable(UNAVAILABLE)
    if isinstance(exc, IdentityUnavailable):
        return exceptions.ServiceUnavailable(str(exc))
    if isinstance(exc, BodyTooLarge):
        return exceptions.RequestEntityTooLarge(str(exc))
    if is_unstorable(exc):
        # A value the database cannot hold is the request's fault, whatever validation let by.
        LOG.info("refused a value the database cannot store: %s", getattr(exc, "orig", exc))
        return exceptions.BadRequest("The request holds a value the database cannot store.")
    error = exceptions.NetworkServiceError(
        "An unexpected error occurred; the server log has the details."
    )
    return error


def error_response(
    error: exceptions.NetworkServiceError, headers: dict[str, str] | None = None
) -> Response:
    return Response(
        dumps(refusal_document(error)),
        status_code=error.status,
        headers=headers,
        media_type=JSON,
    )

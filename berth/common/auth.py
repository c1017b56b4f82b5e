"""Authentication strategies: who a request's headers say the caller is.

Each API is given an :class:`Authenticator` when it is built: :func:`noauth2` for development,
tests and benchmarks, or Keystone's token validation (``berth.identity.tokens``). Either returns
the :class:`RequestContext` the API's policy is evaluated against.

``noauth2`` has upstream's semantics: the ``X-Auth-Token`` value is ``user[:project]`` (``admin``
is an admin), ``X-Roles`` sets the roles, ``X-Project-Id`` overrides the project, and
``OpenStack-System-Scope: all`` makes the request system scoped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Mapping
from typing import Any, Protocol

from berth.common.context import RequestContext


class Unauthenticated(Exception):
    """No valid credentials were given (401); ``headers`` go out with the refusal."""

    def __init__(self, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.headers = dict(headers or {})


class IdentityUnavailable(Exception):
    """The identity service could not be asked whether a token is valid (503)."""


class Authenticator(Protocol):
    """Turns a request's headers into its caller, or raises Unauthenticated."""

    def __call__(
        self, headers: Mapping[str, str], request_id: str
    ) -> Awaitable[RequestContext]: ...


# Where an in-process caller (berth.common.inprocess) puts who it is in the ASGI scope. A server
# builds a request's scope from the wire with its own fixed keys, so no request from outside the
# process can set it: it is as trusted as a function call.
IN_PROCESS_CALLER = "berth.caller"


async def caller(
    scope: Mapping[str, Any],
    headers: Mapping[str, str],
    request_id: str,
    authenticate: Authenticator,
) -> RequestContext:
    """Who is asking: the in-process caller the scope names, without a token to validate (so
    the all-in-one stack's services can call each other before its identity service is up),
    or else whom ``authenticate`` finds in the headers."""
    known: RequestContext | None = scope.get(IN_PROCESS_CALLER)
    if known is not None:
        return dataclasses.replace(known, request_id=request_id)
    return await authenticate(headers, request_id)


def noauth2(headers: Mapping[str, str], request_id: str) -> RequestContext:
    token = headers.get("x-auth-token")
    if not token:
        raise Unauthenticated("The request you have made requires authentication.")
    user_id, _, project_id = token.partition(":")
    project_id = project_id or user_id
    if "x-roles" in headers:
        roles = tuple(r.strip() for r in headers["x-roles"].split(",") if r.strip())
    elif user_id == "admin":
        roles = ("admin",)
    else:
        roles = ()
    system_scope = headers.get("openstack-system-scope") or None
    project: str | None = headers.get("x-project-id") or (None if system_scope else project_id)
    return RequestContext(
        user_id=user_id,
        project_id=project,
        roles=roles,
        system_scope=system_scope,
        request_id=request_id,
    )


async def noauth2_authenticator(headers: Mapping[str, str], request_id: str) -> RequestContext:
    """:func:`noauth2` as an :class:`Authenticator` (it needs no I/O, so no thread)."""
    return noauth2(headers, request_id)


def anonymous(request_id: str) -> RequestContext:
    """The caller of the version document, which needs no credentials."""
    return RequestContext(user_id=None, project_id=None, request_id=request_id)

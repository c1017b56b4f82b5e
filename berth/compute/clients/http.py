"""How the compute service reaches another service: over HTTP, or in process through the same
client code (an ASGI app called without sockets, as the all-in-one mode does)."""

from __future__ import annotations

from typing import Any

import httpx

from berth.common.context import RequestContext
from berth.common.inprocess import InProcessClient, InProcessTransport
from berth.identity.service_user import StaticToken


class ServiceUnavailable(Exception):
    """The other service did not answer, or answered with a server error."""


def http_client(base_url: str, auth: httpx.Auth, timeout: float = 30.0) -> httpx.Client:
    """A client of another service; ``auth`` signs each call (berth.identity.service_user)."""
    return httpx.Client(base_url=base_url.rstrip("/"), auth=auth, timeout=timeout)


def in_process_client(
    app: Any,
    auth: httpx.Auth | RequestContext,
    base_url: str = "http://in-process",
    inline: bool = False,
) -> httpx.Client:
    """A client of an ASGI app in this process (berth.common.inprocess; ``inline``: the app
    runs in the caller's thread). ``auth`` signs each call, or is the caller itself, whom the
    app then takes at its word (berth.common.auth.caller): no token, no identity service.
    A fixed token (noauth2) is sent as the client's own headers, so that its calls too skip
    httpx's request machinery (``InProcessClient``), which cost about 0.1 ms a call."""
    if isinstance(auth, RequestContext):
        return InProcessClient(InProcessTransport(app, inline, caller=auth), base_url)
    if isinstance(auth, StaticToken):
        return InProcessClient(InProcessTransport(app, inline), base_url, auth.headers)
    return httpx.Client(transport=InProcessTransport(app, inline), base_url=base_url, auth=auth)


def call(client: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    """One request; a transport failure or a 5xx becomes ServiceUnavailable, anything else is
    for the caller to read."""
    try:
        answer = client.request(method, path, **kwargs)
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(f"{method} {path}: {exc}") from exc
    if answer.status_code >= 500:
        raise ServiceUnavailable(f"{method} {path}: {answer.status_code} {answer.text[:500]}")
    return answer

"""Calls within one process that name their caller instead of carrying a token
(berth.common.auth.caller): the all-in-one stack's services calling Placement; and those that
carry a fixed noauth2 token."""

from __future__ import annotations

import httpx
import pytest
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from berth.common import auth
from berth.common.context import RequestContext
from berth.common.inprocess import InProcessClient, InProcessTransport
from berth.compute.clients.http import in_process_client
from berth.config import KeystoneAuthtokenSettings
from berth.identity.service_user import StaticToken, in_process_caller, service_auth

SERVICE = RequestContext("berth", "service", ("admin", "service"), request_id="from the caller")


async def _refuse_every_token(headers: object, request_id: str) -> RequestContext:
    raise auth.Unauthenticated("no token is good here")


async def _who_asks(scope: Scope, receive: Receive, send: Send) -> None:
    headers = {name.decode(): value.decode() for name, value in scope["headers"]}
    try:
        context = await auth.caller(scope, headers, "req-1", _refuse_every_token)
    except auth.Unauthenticated:
        await JSONResponse({}, 401)(scope, receive, send)
        return
    seen = {"user": context.user_id, "roles": list(context.roles), "request": context.request_id}
    await JSONResponse(seen)(scope, receive, send)


@pytest.mark.parametrize("inline", [True, False])
def test_the_caller_the_transport_names_is_taken_without_a_token(inline: bool) -> None:
    transport = InProcessTransport(_who_asks, inline, caller=SERVICE)
    with httpx.Client(transport=transport, base_url="http://app") as client:
        answer = client.get("/")
    assert answer.status_code == 200
    # The request's own id, not the one the caller was made with.
    assert answer.json() == {"user": "berth", "roles": ["admin", "service"], "request": "req-1"}


def test_without_a_named_caller_the_token_decides_whatever_the_headers_say() -> None:
    with httpx.Client(transport=InProcessTransport(_who_asks), base_url="http://app") as client:
        answer = client.get("/", headers={auth.IN_PROCESS_CALLER: "berth"})
    assert answer.status_code == 401


def test_under_noauth2_a_services_in_process_caller_is_whom_its_token_names() -> None:
    keystone = KeystoneAuthtokenSettings()
    request = httpx.Request("GET", "http://placement/")
    next(service_auth("noauth2", "admin", keystone).auth_flow(request))
    signed = auth.noauth2(request.headers, "")
    assert in_process_caller("noauth2", "admin", keystone, {}) == signed
    assert signed.roles == ("admin", "service")


async def _echo(scope: Scope, receive: Receive, send: Send) -> None:
    message = await receive()
    seen = {
        "method": scope["method"],
        "path": scope["path"],
        "raw_path": scope["raw_path"].decode(),
        "query": scope["query_string"].decode(),
        "headers": sorted([n.decode(), v.decode()] for n, v in scope["headers"]),
        "server": list(scope["server"]),
        "caller": scope[auth.IN_PROCESS_CALLER].user_id,
        "body": message["body"].decode(),
    }
    await JSONResponse(seen, headers={"x-answer": "yes"})(scope, receive, send)


REQUESTS: list[tuple[str, str, dict[str, object]]] = [
    ("GET", "/resource_providers", {"params": [("member_of", "in:a,b"), ("name", "x y")]}),
    ("GET", "/resource_providers", {"params": {"uuid": "u1"}, "headers": {"Accept": "x/y"}}),
    ("POST", "/resource_providers", {"json": {"name": "hôte-1", "parent": None, 3: [1.5]}}),
    ("PUT", "/resource_providers/u1/traits", {"content": b"raw", "headers": {"X-A": "1"}}),
    ("DELETE", "/resource_providers/a%2Fb", {}),
    ("GET", "/traits/with space", {}),
    ("GET", "/usages", {"params": {"project_id": "p"}, "timeout": 5}),
]


@pytest.mark.parametrize(("method", "path", "options"), REQUESTS)
def test_the_in_process_client_sends_what_httpx_would(
    method: str, path: str, options: dict[str, object]
) -> None:
    """Its own way (or httpx's, for what it does not take) reaches the app as httpx's does."""
    answers = []
    for client_class in (httpx.Client, InProcessClient):
        transport = InProcessTransport(_echo, inline=True, caller=SERVICE)
        if client_class is InProcessClient:
            client = InProcessClient(transport, "http://placement/base")
        else:
            client = httpx.Client(transport=transport, base_url="http://placement/base")
        client.headers["openstack-api-version"] = "placement 1.39"
        with client:
            answer = client.request(method, path, **options)  # type: ignore[arg-type]
        assert answer.headers["x-answer"] == "yes"
        answers.append(
            {**answer.json(), "request": [answer.request.method, str(answer.request.url)]}
        )
    assert answers[0] == answers[1]
    assert answers[1]["path"].startswith("/base/")


async def _headers_seen(scope: Scope, receive: Receive, send: Send) -> None:
    await receive()
    headers = sorted([n.decode(), v.decode()] for n, v in scope["headers"])
    await JSONResponse({"headers": headers, "caller": auth.IN_PROCESS_CALLER in scope})(
        scope, receive, send
    )


@pytest.mark.parametrize(("method", "path", "options"), REQUESTS)
def test_a_fixed_token_reaches_the_app_as_httpx_signs_it(
    method: str, path: str, options: dict[str, object]
) -> None:
    """A noauth2 service's in-process client sends its token as its own headers, on the
    client's own way: the app sees what httpx with the token's auth sends."""
    token = service_auth("noauth2", "nova", KeystoneAuthtokenSettings())
    assert isinstance(token, StaticToken)
    fast = in_process_client(_headers_seen, token, "http://network", inline=True)
    assert isinstance(fast, InProcessClient)
    slow = httpx.Client(
        transport=InProcessTransport(_headers_seen, inline=True),
        base_url="http://network",
        auth=token,
    )
    with fast, slow:
        answers = [c.request(method, path, **options).json() for c in (slow, fast)]  # type: ignore[arg-type]
    assert answers[0] == answers[1]
    assert ["x-auth-token", "nova"] in answers[1]["headers"] and not answers[1]["caller"]

"""How a Berth service authenticates its calls to another: a fixed noauth2 token, or, with
Keystone, as its service user, the way Nova calls Placement and Neutron."""

from __future__ import annotations

import threading
from collections.abc import Generator, Mapping
from typing import Any

import httpx
from keystoneauth1 import loading
from keystoneauth1 import session as ks_session

from berth.common.auth import noauth2
from berth.common.context import RequestContext
from berth.config import AuthStrategy, KeystoneAuthtokenSettings
from berth.identity.strategy import require_identity

# The role Keystone gives service users, which services check (Placement's reshaper policy).
SERVICE_ROLE = "service"


class StaticToken(httpx.Auth):
    """noauth2: the same X-Auth-Token on every call (``admin`` is an admin), and X-Roles when
    ``roles`` are given."""

    def __init__(self, token: str, roles: tuple[str, ...] = ()) -> None:
        self.token = token
        self.roles = ",".join(roles)

    @property
    def headers(self) -> dict[str, str]:
        """What it adds to every call (a client may send them as its own headers instead)."""
        return {"x-auth-token": self.token, **({"x-roles": self.roles} if self.roles else {})}

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.update(self.headers)
        yield request


class ServiceUser(httpx.Auth):
    """The service user's token as X-Auth-Token and as X-Service-Token.

    keystoneauth renews the token before it expires; a 401 (the token was revoked, or Keystone
    restarted with new keys) gets one retry with a fresh token.
    """

    def __init__(self, keystone: KeystoneAuthtokenSettings) -> None:
        loader = loading.get_plugin_loader(keystone.auth_type)
        given: dict[str, Any] = keystone.model_dump()
        options = {
            option.dest: given[option.dest]
            for option in loader.get_options()
            if given.get(option.dest) is not None
        }
        self._session = ks_session.Session(auth=loader.load_from_options(**options))
        self._lock = threading.Lock()

    def token(self) -> str:
        with self._lock:  # one fetch when many threads find the token missing or expiring
            token = self._session.get_token()
        if not token:
            raise httpx.HTTPError("the identity service gave the service user no token")
        return str(token)

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        self._sign(request, self.token())
        response = yield request
        if response.status_code == 401:
            with self._lock:
                self._session.invalidate()
            self._sign(request, self.token())
            yield request

    @staticmethod
    def _sign(request: httpx.Request, token: str) -> None:
        request.headers["x-auth-token"] = token
        request.headers["x-service-token"] = token


def service_auth(
    strategy: AuthStrategy, noauth2_token: str, keystone: KeystoneAuthtokenSettings
) -> httpx.Auth:
    """What a service's outgoing calls carry under its ``auth_strategy``."""
    if strategy == "keystone":
        require_identity(strategy, keystone)
        return ServiceUser(keystone)
    return StaticToken(noauth2_token, _noauth2_roles(noauth2_token))


def in_process_caller(
    strategy: AuthStrategy,
    noauth2_token: str,
    keystone: KeystoneAuthtokenSettings,
    known_roles: Mapping[tuple[str, str], tuple[str, ...]],
) -> RequestContext | None:
    """Who a service is when it calls another in process (berth.common.auth.caller): who its
    token would say it is, without asking an identity service. Under Keystone that takes
    knowing the service user's roles (``known_roles`` by user and project name, as the embedded
    Keystone gives them); for any other user, None: its calls carry its token."""
    if strategy == "noauth2":
        signed = StaticToken(noauth2_token, _noauth2_roles(noauth2_token))
        return noauth2({"x-auth-token": signed.token, "x-roles": signed.roles}, "")
    roles = known_roles.get((keystone.username or "", keystone.project_name or ""))
    if roles is None:
        return None
    return RequestContext(
        user_id=keystone.username,
        project_id=keystone.project_name,
        roles=roles,
        service_roles=roles,
        extra={"user_name": keystone.username or "", "project_name": keystone.project_name or ""},
    )


def _noauth2_roles(token: str) -> tuple[str, ...]:
    """A service is a service under noauth2 too: its token's roles and the service role, which
    Placement's policy asks for (the reshaper), as a Keystone service user has."""
    return (*noauth2({"x-auth-token": token}, "").roles, SERVICE_ROLE)

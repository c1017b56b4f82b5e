"""Keystone token validation: keystonemiddleware's auth_token decides, Berth reads its verdict.

auth_token is WSGI middleware. Each request's token headers are handed to it in a minimal WSGI
environ (in a worker thread: validating a new token is an HTTP call to Keystone), and the
identity headers it sets on the way through become the request's context. Headers a client
sends that only auth_token may set (``X-Roles``, ``X-User-Id``...) never reach it: auth_token
strips them from its copy, and nothing else of the request is read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from keystoneauth1 import loading
from keystonemiddleware import auth_token
from oslo_config import cfg

from berth.common.asgi import HandlerThreads
from berth.common.auth import IdentityUnavailable, Unauthenticated
from berth.common.context import RequestContext

# The only request headers auth_token reads.
TOKEN_HEADERS = ("x-auth-token", "x-service-token", "x-storage-token")
_PASSED = "berth.authenticated"
GROUP = "keystone_authtoken"
StartResponse = Callable[..., Any]


def _passed(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """The app behind auth_token: reached only by requests it lets through."""
    environ[_PASSED] = True
    start_response("204 No Content", [])
    return []


class KeystoneTokens:
    """An Authenticator that validates tokens with a Keystone (see the module docstring)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        # A private oslo.config object: the embedded Keystone owns the process-wide one.
        conf = cfg.ConfigOpts()
        conf(args=[], default_config_files=[], default_config_dirs=[], use_env=False)
        # The service user's options (username, password...) belong to its keystoneauth plugin,
        # which auth_token loads from the config object; the rest are auth_token's own.
        plugin = loading.get_plugin_loader(options.get("auth_type", "password"))
        plugin_options = loading.get_auth_plugin_conf_options(plugin)
        conf.register_opts(plugin_options, group=GROUP)
        own = dict(options)
        for option in plugin_options:
            if option.dest in own:
                conf.set_override(option.dest, own.pop(option.dest), GROUP)
        self._auth_token = auth_token.AuthProtocol(_passed, {**own, "oslo_config_config": conf})
        self.threads = HandlerThreads("token-validation")
        self.verdicts = Verdicts(float(options.get("token_cache_time", 300)))

    async def __call__(self, headers: Mapping[str, str], request_id: str) -> RequestContext:
        tokens = tuple((name, headers[name]) for name in TOKEN_HEADERS if name in headers)
        known = self.verdicts.get(tokens)
        if known is not None:
            return dataclasses.replace(known, request_id=request_id)
        return await self.threads.run(self.validate, dict(tokens), request_id)

    def validate(self, tokens: Mapping[str, str], request_id: str) -> RequestContext:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": "/",
            "SERVER_NAME": "berth",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(),
            **{"HTTP_" + name.upper().replace("-", "_"): value for name, value in tokens.items()},
        }
        answer: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> None:
            answer[:] = [int(status.split()[0]), headers]

        b"".join(self._auth_token(environ, start_response))
        if environ.get(_PASSED):
            context = _context(environ, request_id)
            self.verdicts.keep(tuple(tokens.items()), context, _expiries(environ))
            return context
        status, response_headers = answer
        if status == 401:
            refusal = {k: v for k, v in response_headers if k.lower() == "www-authenticate"}
            raise Unauthenticated("The request you have made requires authentication.", refusal)
        raise IdentityUnavailable(f"The identity service could not validate the token ({status}).")


class Verdicts:
    """Tokens auth_token accepted lately, with whom they stand for.

    Services present the same token on every call (the all-in-one stack's services call each
    other thousands of times while a fleet registers), and handing it to auth_token each time
    costs a millisecond or more even when auth_token has it cached. A verdict is kept no longer
    than auth_token's own cache keeps a token (``token_cache_time``), and never past the expiry
    of the token or of the service token that came with it; refusals are not kept.
    """

    MAX_KEPT = 10_000

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._kept: dict[tuple[tuple[str, str], ...], tuple[float, RequestContext]] = {}

    def get(self, tokens: tuple[tuple[str, str], ...]) -> RequestContext | None:
        found = self._kept.get(tokens)
        if found is None:
            return None
        deadline, context = found
        if time.monotonic() >= deadline:
            self._kept.pop(tokens, None)
            return None
        return context

    def keep(
        self,
        tokens: tuple[tuple[str, str], ...],
        context: RequestContext,
        expiries: Iterable[dt.datetime | None],
    ) -> None:
        seconds = self.seconds
        for expiry in expiries:
            if expiry is None:
                return
            seconds = min(seconds, (expiry - dt.datetime.now(dt.UTC)).total_seconds())
        if seconds <= 0:
            return
        if len(self._kept) >= self.MAX_KEPT:
            self._kept.clear()
        self._kept[tokens] = (time.monotonic() + seconds, context)


def _expiries(environ: Mapping[str, Any]) -> list[dt.datetime | None]:
    """When the request's token and its service token (if any) expire, as auth_token read
    them (``keystone.token_auth``); None where it cannot be told."""
    plugin = environ.get("keystone.token_auth")
    if plugin is None:
        return [None]
    refs = [ref for ref in (plugin.user, plugin.service) if ref is not None]
    return [_aware(getattr(ref, "expires", None)) for ref in refs] or [None]


def _aware(moment: dt.datetime | None) -> dt.datetime | None:
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=dt.UTC)


def _context(environ: Mapping[str, Any], request_id: str) -> RequestContext:
    def header(name: str) -> str | None:
        return environ.get("HTTP_" + name.upper().replace("-", "_")) or None

    def roles(name: str) -> tuple[str, ...]:
        return tuple(r.strip() for r in (header(name) or "").split(",") if r.strip())

    extra = {
        key: value
        for key, value in (
            ("user_name", header("X-User-Name")),
            ("project_name", header("X-Project-Name")),
            ("domain_id", header("X-Domain-Id")),
        )
        if value
    }
    return RequestContext(
        user_id=header("X-User-Id"),
        project_id=header("X-Project-Id"),
        roles=roles("X-Roles"),
        system_scope=header("OpenStack-System-Scope"),
        request_id=request_id,
        service_roles=roles("X-Service-Roles"),
        extra=extra,
    )

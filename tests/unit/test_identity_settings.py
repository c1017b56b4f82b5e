"""The auth strategies as settings choose them: noauth2 needs nothing, keystone needs a Keystone."""

from __future__ import annotations

import httpx
import pytest

from berth.common import auth
from berth.config import KeystoneAuthtokenSettings
from berth.identity.service_user import StaticToken, service_auth
from berth.identity.strategy import IdentityNotConfigured, authenticator


def test_noauth2_needs_no_identity_service() -> None:
    assert authenticator("noauth2", KeystoneAuthtokenSettings()) is auth.noauth2_authenticator
    calls = service_auth("noauth2", "admin", KeystoneAuthtokenSettings())
    signed = next(calls.auth_flow(httpx.Request("GET", "http://placement/")))
    assert signed.headers["x-auth-token"] == "admin" and "x-service-token" not in signed.headers
    # The token's own roles and the service role, as a Keystone service user has them.
    assert auth.noauth2(signed.headers, "r").roles == ("admin", "service")
    assert isinstance(calls, StaticToken)
    other = service_auth("noauth2", "nova", KeystoneAuthtokenSettings())
    signed = next(other.auth_flow(httpx.Request("GET", "http://placement/")))
    assert auth.noauth2(signed.headers, "r").roles == ("service",)


def test_keystone_without_a_keystone_is_refused_before_anything_starts() -> None:
    for make in (
        lambda: authenticator("keystone", KeystoneAuthtokenSettings()),
        lambda: service_auth("keystone", "admin", KeystoneAuthtokenSettings()),
    ):
        with pytest.raises(IdentityNotConfigured, match=r"keystone_authtoken\.auth_url"):
            make()


def test_options_keystonemiddleware_takes_pass_through_and_unset_ones_are_left_out() -> None:
    keystone = KeystoneAuthtokenSettings(
        auth_url="http://keystone/identity", memcached_servers=["mc1:11211"]
    )
    options = keystone.auth_token_options()
    assert options["memcached_servers"] == ["mc1:11211"]
    assert options["service_token_roles"] == ["service"]
    assert "username" not in options and "www_authenticate_uri" not in options

"""Which Authenticator an API gets for its ``auth_strategy``."""

from __future__ import annotations

from berth.common import auth
from berth.config import AuthStrategy, KeystoneAuthtokenSettings


class IdentityNotConfigured(Exception):
    """auth_strategy is keystone but [keystone_authtoken] does not say where Keystone is."""


def authenticator(
    strategy: AuthStrategy, keystone: KeystoneAuthtokenSettings
) -> auth.Authenticator:
    if strategy == "noauth2":
        return auth.noauth2_authenticator
    if not keystone.auth_url or not keystone.username or not keystone.password:
        raise IdentityNotConfigured(
            "auth_strategy is keystone: set keystone_authtoken.auth_url, username and password "
            "(the service user that validates tokens)"
        )
    # Imported here: keystonemiddleware is only loaded by processes that use it.
    from berth.identity.tokens import KeystoneTokens

    return KeystoneTokens(keystone.auth_token_options())

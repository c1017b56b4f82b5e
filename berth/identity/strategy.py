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
    require_identity(strategy, keystone)
    # Imported here: keystonemiddleware is only loaded by processes that use it.
    from berth.identity.tokens import KeystoneTokens

    return KeystoneTokens(keystone.auth_token_options())


def require_identity(strategy: AuthStrategy, keystone: KeystoneAuthtokenSettings) -> None:
    """Refuse, before a server starts, the keystone strategy without a Keystone to ask."""
    # The rest of the service user's options depend on its auth_type (a password, an
    # application credential...): keystoneauth names whichever is missing.
    if strategy == "keystone" and not keystone.auth_url:
        raise IdentityNotConfigured(
            "auth_strategy is keystone: set keystone_authtoken.auth_url and the service user's "
            "credentials (username and password by default)"
        )

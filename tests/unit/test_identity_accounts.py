"""The embedded Keystone's accounts and catalog are ensured again only when they changed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from berth.identity import accounts
from berth.identity.accounts import ensure_accounts

PASSWORDS = {"admin": "a", "berth": "b", "demo": "c", "demo-reader": "d"}
CATALOG = {"identity": "http://127.0.0.1:8080/identity", "compute": "http://127.0.0.1:8080/compute"}


class Asked(Exception):
    """Keystone was asked something."""


def _keystone(request: httpx.Request) -> httpx.Response:
    raise Asked(f"{request.method} {request.url.path}")


def _client() -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(_keystone), base_url="http://identity")


def test_a_new_or_changed_set_is_ensured_and_the_same_set_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamp = tmp_path / "accounts-done"
    with pytest.raises(Asked, match="POST /v3/auth/tokens"):
        ensure_accounts(_client(), PASSWORDS, CATALOG, stamp)
    assert not stamp.exists()  # a failed run leaves no stamp: the next start tries again

    # What a successful run leaves behind: nothing is asked on the next start...
    with monkeypatch.context() as patched:
        patched.setattr(accounts, "_ensure", lambda *_: None)
        ensure_accounts(_client(), PASSWORDS, CATALOG, stamp)
    assert stamp.exists()
    ensure_accounts(_client(), PASSWORDS, CATALOG, stamp)

    # ...until the catalog (another port) or a password changes.
    moved = {name: url.replace("8080", "9090") for name, url in CATALOG.items()}
    with pytest.raises(Asked):
        ensure_accounts(_client(), PASSWORDS, moved, stamp)
    with pytest.raises(Asked):
        ensure_accounts(_client(), {**PASSWORDS, "demo": "new"}, CATALOG, stamp)

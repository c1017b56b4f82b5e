"""The embedded Keystone's first set-up, whatever its generated admin password looks like."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from berth.identity import embedded


def test_an_admin_password_beginning_with_a_dash_still_bootstraps(tmp_path: Path) -> None:
    # token_urlsafe draws from an alphabet with "-": one new data directory in 64 got such a
    # password, which keystone-manage took for an option, and berth up failed to start.
    home = embedded.KeystoneHome(tmp_path / "identity")
    home.root.mkdir()
    home.passwords_file.write_text(json.dumps({embedded.ADMIN: "-starts-with-a-dash"}))
    identity_url = "http://identity.local/identity"
    passwords = embedded.prepare(home, identity_url)
    assert passwords[embedded.ADMIN] == "-starts-with-a-dash"
    keystone = embedded.wsgi_app(home, lambda: None)
    with httpx.Client(
        transport=httpx.WSGITransport(app=keystone, script_name="/identity"),
        base_url="http://identity.local",
    ) as client:
        login = {
            "auth": {
                "identity": {
                    "methods": ["password"],
                    "password": {
                        "user": {
                            "name": embedded.ADMIN,
                            "password": "-starts-with-a-dash",
                            "domain": {"id": "default"},
                        }
                    },
                }
            }
        }
        assert client.post("/v3/auth/tokens", json=login).status_code == 201

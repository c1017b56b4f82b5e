"""Keystone's set-up, in a child process: ``keystone-manage``'s steps, or the accounts.

Each ``keystone-manage`` run spends about a second importing Keystone before a step that takes
a fraction of that (a fresh schema, two key repositories, the bootstrap admin). Here the steps
arrive on stdin (``{"steps": [argument lists]}``) and run one after another on one import;
oslo.config's process-wide object is cleared between them, as a new process would have it.
A step that fails ends the process with its error, as ``keystone-manage`` does.

``{"accounts": {...}}`` instead makes the users, projects, roles and catalog
(``berth.identity.accounts``) through the Keystone API of an app made here, off the process that
will serve Keystone, which has the fleet to register meanwhile. Keystone cannot make that app in
a process that has already run ``keystone-manage``'s steps, hence a child of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from berth.identity import deferred_saml


def main() -> None:
    job: dict[str, Any] = json.load(sys.stdin)
    if "accounts" in job:
        _accounts(**job["accounts"])
        return
    deferred_saml.defer()
    from keystone.cmd import cli

    for arguments in job["steps"]:
        cli.CONF.clear()
        cli.main(argv=["keystone-manage", *arguments], developer_config_file=None)


def _accounts(
    home: str, script_name: str, passwords: dict[str, str], catalog: dict[str, str]
) -> None:
    import httpx

    from berth.identity import embedded
    from berth.identity.accounts import ensure_accounts

    keystone_home = embedded.KeystoneHome(Path(home))
    app = embedded.wsgi_app(keystone_home, lambda: None)
    transport = httpx.WSGITransport(app=app, script_name=script_name)
    with httpx.Client(transport=transport, base_url="http://identity.local") as client:
        ensure_accounts(client, passwords, catalog, keystone_home.accounts_stamp)


if __name__ == "__main__":
    main()

"""The Keystone that ``berth up`` runs inside itself: the real ``keystone`` package on SQLite, its
fernet keys in the data directory, served as a WSGI app at ``/identity`` on Berth's one port.

Keystone keeps its configuration in oslo.config's process-wide object, so one process holds at
most one embedded Keystone. Its one-time setup (schema, keys, the bootstrap admin) runs as
``keystone-manage``'s steps in a child process (``berth.identity.manage``), which parses its own
command lines; the accounts and catalog are made in another (``berth.allinone.identity``).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

from berth.identity import deferred_saml

LOG = logging.getLogger(__name__)
T = TypeVar("T")

REGION = "RegionOne"
ADMIN = "admin"
# Who a fresh cloud has, besides the admin: name -> (project, role).
SERVICE_USER = "berth"
SERVICE_PROJECT = "service"
DEMO_PROJECT = "demo"
USERS = {
    SERVICE_USER: (SERVICE_PROJECT, ("admin", "service")),
    "demo": (DEMO_PROJECT, ("member",)),
    "demo-reader": (DEMO_PROJECT, ("reader",)),
}
# The role each role the bootstrap makes implies (keystone 30: admin, manager, member, reader).
_IMPLIES = {"admin": "manager", "manager": "member", "member": "reader"}


def token_roles(user: str) -> tuple[str, ...]:
    """The roles a token of ``user`` (of USERS) carries in its project: its own and every role
    they imply, as Keystone lists them."""
    roles: list[str] = []
    for role in USERS[user][1]:
        while role and role not in roles:
            roles.append(role)
            role = _IMPLIES.get(role, "")
    return tuple(roles)


@dataclass(frozen=True)
class KeystoneHome:
    """Where the embedded Keystone keeps its files: ``<data_dir>/identity``."""

    root: Path

    @property
    def config_file(self) -> Path:
        return self.root / "keystone.conf"

    @property
    def passwords_file(self) -> Path:
        return self.root / "passwords.json"

    @property
    def accounts_stamp(self) -> Path:
        # A digest of the accounts and catalog last ensured (berth.identity.accounts).
        return self.root / "accounts-done"

    @property
    def setup_stamp(self) -> Path:
        # The keystone release whose schema and keys are in place.
        return self.root / "setup-done"

    def passwords(self) -> dict[str, str]:
        """Every account's password, made once and kept (owner-readable only)."""
        path = self.passwords_file
        known: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
        wanted = (ADMIN, *USERS)
        if any(name not in known for name in wanted):
            for name in wanted:
                known.setdefault(name, secrets.token_urlsafe(18))
            self.root.mkdir(parents=True, exist_ok=True)
            path.touch(mode=0o600)
            path.write_text(json.dumps(known, indent=2))
        return known

    def write_config(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            "\n".join(
                (
                    "[DEFAULT]",
                    # Records go to Python's logging, as Berth's own do (see wsgi_app).
                    "use_stderr = true",
                    "[identity]",
                    # bcrypt reads 72 bytes; a larger limit makes Keystone warn at every login.
                    "max_password_length = 72",
                    # One Keystone process: its own memory is a cache every request can
                    # share (role assignments, catalog, token validation), as memcached is for
                    # a Keystone of several processes.
                    "[cache]",
                    "enabled = true",
                    "backend = oslo_cache.dict",
                    "[database]",
                    f"connection = sqlite:///{self.root / 'keystone.db'}",
                    "[token]",
                    "provider = fernet",
                    "[fernet_tokens]",
                    f"key_repository = {self.root / 'fernet-keys'}",
                    "[fernet_receipts]",
                    f"key_repository = {self.root / 'fernet-keys'}",
                    "[credential]",
                    f"key_repository = {self.root / 'credential-keys'}",
                    "",
                )
            )
        )


def prepare(home: KeystoneHome, identity_url: str) -> dict[str, str]:
    """Schema, keys and the bootstrap admin, once per data directory (and again after an
    upgrade of the keystone package); returns every account's password."""
    home.write_config()
    passwords = home.passwords()
    release = metadata.version("keystone")
    if home.setup_stamp.exists() and home.setup_stamp.read_text() == release:
        return passwords
    LOG.info("setting up the identity service in %s (keystone %s)", home.root, release)
    owner = ["--keystone-user", str(os.getuid()), "--keystone-group", str(os.getgid())]
    config = ["--config-file", str(home.config_file)]
    steps = [
        [*config, "db_sync"],
        [*config, "fernet_setup", *owner],
        [*config, "credential_setup", *owner],
        [
            *config, "bootstrap",
            # "=": a password may begin with "-", which argparse would take for an option.
            "--bootstrap-username", ADMIN, f"--bootstrap-password={passwords[ADMIN]}",
            "--bootstrap-project-name", ADMIN, "--bootstrap-role-name", "admin",
            "--bootstrap-region-id", REGION,
            "--bootstrap-public-url", identity_url, "--bootstrap-internal-url", identity_url,
        ],
    ]  # fmt: skip
    in_child({"steps": steps}, "keystone-manage", _import_keystone_app)
    home.setup_stamp.write_text(release)
    return passwords


def in_child(job: Mapping[str, Any], what: str, meanwhile: Callable[[], T]) -> T:
    """``job`` in a child (berth.identity.manage), given on its stdin rather than its command
    line, which any local user can read: it holds passwords. ``meanwhile`` runs here while the
    child works; what it answers is answered once the child has done."""
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", "berth.identity.manage"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors, text=True,
        )  # fmt: skip
        assert child.stdin is not None
        child.stdin.write(json.dumps(job))
        child.stdin.close()
        done = meanwhile()
        if child.wait() != 0:
            errors.seek(0)
            raise RuntimeError(f"{what} failed:\n{errors.read()[-3000:]}")
    return done


def _import_keystone_app() -> None:
    # Keystone imports oslo.service, which imports eventlet, which warns that it is deprecated;
    # the embedded Keystone never runs on eventlet.
    warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
    deferred_saml.defer()
    import keystone.server.flask.core  # noqa: F401


def wsgi_app(home: KeystoneHome, restore_logging: Callable[[], None]) -> Any:
    """Keystone's Flask app, configured from ``home``'s file.

    Keystone parses its configuration from the command line too; Berth's own arguments are not
    for it. Its logging setup replaces the process's handlers, which ``restore_logging`` puts back.
    """
    _import_keystone_app()
    from keystone.server.flask import core

    with _command_line(sys.argv[:1]):
        app = core.initialize_application(name="public", config_files=[str(home.config_file)])
    restore_logging()
    return OneWriterAtATime(app)


class OneWriterAtATime:
    """Keystone's requests that may write (every method but GET, HEAD, OPTIONS; a login writes
    the user's last_active_at) run one at a time.

    Keystone's transactions read before they write. On SQLite, two such transactions at once
    cannot both upgrade their read lock, and the second fails at once with "database is locked"
    (a 500), without waiting: tempest, which makes and deletes projects and users from several
    workers, met one in every few dozen requests. Reads still run side by side."""

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: Any) -> None:
        self.app = app
        self._writing = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("REQUEST_METHOD", "GET") in self.SAFE_METHODS:
            return self.app(environ, start_response)
        with self._writing:
            # Flask builds the body inside the call; reading it here keeps any lazy part of it
            # inside the lock too.
            body = self.app(environ, start_response)
            try:
                return list(body)
            finally:
                if hasattr(body, "close"):
                    body.close()


@contextmanager
def _command_line(argv: list[str]) -> Iterator[None]:
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved

"""What a fresh cloud's identity service holds besides its admin: the service user, a demo
project with a member and a reader, and the catalog of Berth's services at their endpoints.

Everything goes through Keystone's own v3 API as the admin, and every step is idempotent: it only
creates what is missing and moves endpoints that changed (a new port). It runs when what it would
make differs from what it made last (a digest kept beside Keystone's files), so a restart on the
same data directory and port costs nothing here, and what an operator changed through Keystone
since stays changed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from berth.identity.embedded import ADMIN, REGION, USERS

DOMAIN = "default"
SERVICE_NAMES = {
    "identity": "keystone",
    "compute": "berth-compute",
    "network": "berth-network",
    "placement": "berth-placement",
    "image": "berth-image",
}
INTERFACES = ("public", "internal")


class IdentityRefused(Exception):
    """Keystone refused one of the setup calls; the message has its answer."""


class _Keystone:
    def __init__(self, client: httpx.Client, admin_password: str) -> None:
        self.client = client
        self.client.headers["x-auth-token"] = self._admin_token(admin_password)

    def _admin_token(self, password: str) -> str:
        scope = {"project": {"name": ADMIN, "domain": {"id": DOMAIN}}}
        answer = self.call("POST", "/v3/auth/tokens", json=_password_auth(ADMIN, password, scope))
        return answer.headers["x-subject-token"]

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        answer = self.client.request(method, path, **kwargs)
        if answer.status_code >= 400:
            raise IdentityRefused(f"{method} {path}: {answer.status_code} {answer.text[:500]}")
        return answer

    def one(self, collection: str, body: Mapping[str, Any], **query: str) -> dict[str, Any]:
        """The ``collection`` member that ``query`` finds, created from ``body`` if none does."""
        found = self.call("GET", f"/v3/{collection}", params=query).json()[collection]
        if found:
            return dict(found[0])
        member = collection.rstrip("s")
        return dict(self.call("POST", f"/v3/{collection}", json={member: body}).json()[member])


def ensure_accounts(
    client: httpx.Client,
    passwords: Mapping[str, str],
    endpoints: Mapping[str, str],
    stamp: Path,
) -> None:
    """Users, projects, roles and the catalog (service type -> URL) on the Keystone ``client``
    reaches; ``passwords`` has the admin's and each user's. Nothing is asked of Keystone when
    ``stamp`` says this very set was ensured before."""
    if ensured(passwords, endpoints, stamp):
        return
    _ensure(client, passwords, endpoints)
    stamp.write_text(_digest(passwords, endpoints))


def ensured(passwords: Mapping[str, str], endpoints: Mapping[str, str], stamp: Path) -> bool:
    """Whether ``stamp`` says these very accounts and catalog were ensured before."""
    return stamp.exists() and stamp.read_text() == _digest(passwords, endpoints)


def _digest(passwords: Mapping[str, str], endpoints: Mapping[str, str]) -> str:
    wanted = json.dumps([USERS, dict(passwords), dict(endpoints)], sort_keys=True)
    return hashlib.sha256(wanted.encode()).hexdigest()


def _ensure(
    client: httpx.Client, passwords: Mapping[str, str], endpoints: Mapping[str, str]
) -> None:
    keystone = _Keystone(client, passwords[ADMIN])
    roles = {
        name: keystone.one("roles", {"name": name}, name=name)["id"]
        for name in sorted({role for _, names in USERS.values() for role in names})
    }
    for name, (project_name, role_names) in USERS.items():
        project = keystone.one(
            "projects", {"name": project_name, "domain_id": DOMAIN}, name=project_name,
            domain_id=DOMAIN,
        )  # fmt: skip
        user = keystone.one(
            "users",
            {"name": name, "domain_id": DOMAIN, "password": passwords[name],
             "default_project_id": project["id"]},
            name=name, domain_id=DOMAIN,
        )  # fmt: skip
        for role in role_names:
            keystone.call(
                "PUT", f"/v3/projects/{project['id']}/users/{user['id']}/roles/{roles[role]}"
            )
    for service_type, url in endpoints.items():
        service = keystone.one(
            "services", {"type": service_type, "name": SERVICE_NAMES[service_type]},
            type=service_type,
        )  # fmt: skip
        for interface in INTERFACES:
            _ensure_endpoint(keystone, service["id"], interface, url)


def _ensure_endpoint(keystone: _Keystone, service_id: str, interface: str, url: str) -> None:
    query = {"service_id": service_id, "interface": interface, "region_id": REGION}
    found = keystone.call("GET", "/v3/endpoints", params=query).json()["endpoints"]
    if not found:
        body = {**query, "url": url, "enabled": True}
        keystone.call("POST", "/v3/endpoints", json={"endpoint": body})
    elif found[0]["url"] != url:
        keystone.call("PATCH", f"/v3/endpoints/{found[0]['id']}", json={"endpoint": {"url": url}})


def _password_auth(user: str, password: str, scope: Mapping[str, Any]) -> dict[str, Any]:
    identity = {
        "methods": ["password"],
        "password": {"user": {"name": user, "domain": {"id": DOMAIN}, "password": password}},
    }
    return {"auth": {"identity": identity, "scope": scope}}

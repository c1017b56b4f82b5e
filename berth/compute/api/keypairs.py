"""/os-keypairs: each user's public keys, which a server is booted with by name (``key_name``).

Key pairs belong to a user, not a project: a caller lists, shows and deletes their own. From
2.10 an admin names another user with ``user_id`` (in the query of GET and DELETE, in the body
of POST); the rules (``os_compute_api:os-keypairs:*``, admin or the key pair's user) refuse it
to anyone else with a 403. A create without ``public_key`` makes a key pair and answers its
private key, which is not kept. The domain is :mod:`berth.compute.keypairs`.

Microversions: 2.2 adds ``type`` (``ssh`` or ``x509``) to the bodies and answers 201 to a create
and 204 to a delete (200 and 202 before); 2.10 adds ``user_id``; 2.35 pages the list with
``limit`` and ``marker`` (a key pair's name) and ``keypairs_links``; 2.92 requires
``public_key`` and allows ``@`` and ``.`` in names.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import RowMapping
from starlette.responses import Response

from berth.compute import exceptions, quotas
from berth.compute import keypairs as rules
from berth.compute.api import paging
from berth.compute.api.request import ComputeRequest
from berth.compute.db import keypairs as store
from berth.compute.db.errors import Duplicate

KEYPAIR_TYPE = (2, 2)  # type in bodies and views; 201 to a create, 204 to a delete
KEYPAIR_USER_ID = (2, 10)  # an admin acts for another user with user_id
KEYPAIR_PAGES = (2, 35)  # limit, marker and keypairs_links on the list
# public_key required, "@" and "." in names. Above microversion.MAX until the versions between
# are served; the check is in place for when they are.
KEYPAIR_IMPORT_ONLY = (2, 92)


def index(req: ComputeRequest) -> Response:
    """``{"keypairs": [{"keypair": {"name", "public_key", "fingerprint", "type"}}],
    "keypairs_links": [next]}`` (links from 2.35, when the page is full)."""
    user_id = _user_of(req)
    req.authorize("os_compute_api:os-keypairs:index", {"user_id": user_id})
    with req.service.api_db.read() as conn:
        rows = store.list_keypairs(conn, user_id)
    links: dict[str, list[dict[str, str]]] = {}
    if req.at_least(KEYPAIR_PAGES):
        page = paging.parse(req)
        rows = paging.after_marker(rows, page, key=lambda row: row["name"])
        links = paging.links(req, "keypairs", rows, page, rows[-1]["name"] if rows else None)
    views = [{"keypair": _transform_brief(req, row)} for row in rows]
    return req.respond({"keypairs": views, **links})


def show(req: ComputeRequest) -> Response:
    user_id = _user_of(req)
    req.authorize("os_compute_api:os-keypairs:show", {"user_id": user_id})
    name = req.param("keypair_name")
    with req.service.api_db.read() as conn:
        row = store.get(conn, user_id, name)
    if row is None:
        raise _no_keypair(name, user_id)
    return req.respond({"keypair": _transform_keypair(req, row)})


def create(req: ComputeRequest) -> Response:
    # The rule's target is the user the body names, so the body is read before the policy check
    # (upstream validates the body first too: a malformed one is a 400 before any 403).
    new = rules.parse_new(
        req.resource_body("keypair"),
        with_type=req.at_least(KEYPAIR_TYPE),
        with_user_id=req.at_least(KEYPAIR_USER_ID),
        import_only=req.at_least(KEYPAIR_IMPORT_ONLY),
    )
    user_id = new.user_id or req.context.user_id or ""
    req.authorize("os_compute_api:os-keypairs:create", {"user_id": user_id})
    if new.public_key is None:
        material = rules.generated(new.type, user_id)
    else:
        material = rules.imported(new.type, new.public_key)
    quotas.prepare_user(req.service.api_db, user_id)
    with req.service.api_db.write() as conn:
        quotas.admit_key_pair(conn, user_id, req.project_id)
        try:
            row = store.create(
                conn, user_id, new.name, new.type, material.fingerprint, material.public_key
            )
        except Duplicate:
            raise exceptions.Conflict(f"Key pair '{new.name}' already exists.") from None
    return req.respond(
        {"keypair": _transform_created(req, row, material.private_key)},
        201 if req.at_least(KEYPAIR_TYPE) else 200,
    )


def delete(req: ComputeRequest) -> Response:
    user_id = _user_of(req)
    req.authorize("os_compute_api:os-keypairs:delete", {"user_id": user_id})
    name = req.param("keypair_name")
    with req.service.api_db.write() as conn:
        if not store.delete(conn, user_id, name):
            raise _no_keypair(name, user_id)
    return req.no_content(204 if req.at_least(KEYPAIR_TYPE) else 202)


def _user_of(req: ComputeRequest) -> str:
    """Whose key pairs a GET or DELETE is about: ``user_id`` from 2.10 (the last one given),
    else the caller's. Before 2.10 the parameter means nothing, as upstream ignores it."""
    if req.at_least(KEYPAIR_USER_ID):
        named = [value for name, value in req.query_items if name == "user_id"]
        if named:
            return named[-1]
    return req.context.user_id or ""


# Views


def _transform_brief(req: ComputeRequest, row: RowMapping) -> dict[str, Any]:
    """``{"name": "laptop", "public_key": "ssh-ed25519 AAAA...", "fingerprint": "56:45:...",
    "type": "ssh"}`` (type from 2.2)"""
    view: dict[str, Any] = {
        "name": row["name"],
        "public_key": row["public_key"],
        "fingerprint": row["fingerprint"],
    }
    if req.at_least(KEYPAIR_TYPE):
        view["type"] = row["type"]
    return view


def _transform_created(
    req: ComputeRequest, row: RowMapping, private_key: str | None
) -> dict[str, Any]:
    """The brief view with ``user_id``, and ``private_key`` when Berth made the key pair."""
    view = {**_transform_brief(req, row), "user_id": row["user_id"]}
    if private_key is not None:
        view["private_key"] = private_key
    return view


def _transform_keypair(req: ComputeRequest, row: RowMapping) -> dict[str, Any]:
    """The brief view with ``id``, ``user_id``, ``created_at``, ``updated_at``, and ``deleted``
    (false) and ``deleted_at`` (null), which upstream shows for its soft deletes."""
    return {
        **_transform_brief(req, row),
        "id": row["id"],
        "user_id": row["user_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"],
        "deleted": False,
        "deleted_at": None,
    }


def _no_keypair(name: str, user_id: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Keypair {name} not found for user {user_id}")

"""/os-server-groups: groups of servers placed together or apart, and their members.

A project sees its own groups; an admin lists every project's with ``all_projects``. Members are
the uuids of the servers in the group, added when a server is booted with the group as hint.

Microversions: 2.13 shows ``project_id`` and ``user_id``; 2.15 allows the soft-affinity and
soft-anti-affinity policies; 2.64 takes one ``policy`` and its ``rules``
(``max_server_per_host``, anti-affinity only) where earlier versions took ``policies``, a list
of one policy, and showed an empty ``metadata``.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from starlette.responses import Response

from berth.compute import exceptions, quotas
from berth.compute.api import paging
from berth.compute.api.microversion import SERVER_GROUP_POLICY_RULES
from berth.compute.api.request import ComputeRequest
from berth.compute.db import server_groups as store
from berth.compute.objects.request_spec import (
    AFFINITY,
    ANTI_AFFINITY,
    SOFT_AFFINITY,
    SOFT_ANTI_AFFINITY,
)

SERVER_GROUP_OWNERS = (2, 13)  # project_id and user_id in the view
SOFT_POLICIES = (2, 15)  # soft-affinity and soft-anti-affinity

_FALSE = frozenset({"0", "false", "no", "off", "f", "n"})


def index(req: ComputeRequest) -> Response:
    """``{"server_groups": [view, ...]}``, paged by ``offset`` and ``limit``."""
    page = paging.parse(req)
    offset = paging.offset_of(req)
    req.authorize("os_compute_api:os-server-groups:index")
    asked_all = [value for name, value in req.query_items if name == "all_projects"]
    # As upstream: all_projects from a caller the rule does not allow just lists their own.
    everyone = (
        bool(asked_all)
        and asked_all[-1].lower() not in _FALSE
        and req.allowed("os_compute_api:os-server-groups:index:all_projects")
    )
    with req.service.api_db.read() as conn:
        groups = store.list_groups(conn, None if everyone else req.project_id)
        shown = groups[offset : offset + page.limit]
        views = [_transform_group(req, conn, group) for group in shown]
    return req.respond({"server_groups": views})


def show(req: ComputeRequest) -> Response:
    rule = "os_compute_api:os-server-groups:show"
    req.authorize(rule)
    with req.service.api_db.read() as conn:
        group = _visible(req, conn, req.param("group_id"), rule)
        return req.respond({"server_group": _transform_group(req, conn, group)})


def create(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-server-groups:create")
    body = req.resource_body("server_group")
    if req.at_least(SERVER_GROUP_POLICY_RULES):
        policy, rules = _policy_and_rules(req, body)
    else:
        policy, rules = _legacy_policy(req, body), {}
    name = body.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 255 or name != name.strip():
        raise exceptions.BadRequest(
            "Invalid input for server_group: name must be 1 to 255 characters, without leading "
            "or trailing whitespace."
        )
    quotas.prepare_project(req.service.api_db, req.project_id)
    with req.service.api_db.write() as conn:
        quotas.admit_server_group(conn, req.project_id, req.context.user_id or "")
        group = store.create(
            conn,
            uuid=str(uuid.uuid4()),
            name=name,
            project_id=req.project_id,
            user_id=req.context.user_id or "",
            policy=policy,
            rules=rules,
        )
        return req.respond({"server_group": _transform_group(req, conn, group)})


def delete(req: ComputeRequest) -> Response:
    rule = "os_compute_api:os-server-groups:delete"
    req.authorize(rule)
    group_id = req.param("group_id")
    with req.service.api_db.write() as conn:
        _visible(req, conn, group_id, rule)
        store.delete(conn, group_id)
    return req.no_content()


def _policy_and_rules(req: ComputeRequest, body: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """2.64: ``{"name": N, "policy": P, "rules": {"max_server_per_host": 2}}``"""
    _only(body, {"name", "policy", "rules"})
    policy = _check_policy(req, body.get("policy"))
    rules = body.get("rules", {})
    if not isinstance(rules, dict):
        raise exceptions.BadRequest("Invalid input for server_group: rules must be an object.")
    unknown = sorted(set(rules) - {"max_server_per_host"})
    if unknown:
        raise exceptions.BadRequest(f"Invalid input for server_group: unknown rules {unknown}.")
    if rules and policy != ANTI_AFFINITY:
        raise exceptions.BadRequest("Only anti-affinity policy supports rules.")
    if "max_server_per_host" not in rules:
        return policy, {}
    limit = rules["max_server_per_host"]
    if isinstance(limit, str) and limit.isascii() and limit.isdigit():
        limit = int(limit)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 2**31 - 1:
        raise exceptions.BadRequest(
            "Invalid input for server_group: max_server_per_host must be a positive integer."
        )
    return policy, {"max_server_per_host": limit}


def _legacy_policy(req: ComputeRequest, body: dict[str, Any]) -> str:
    """Before 2.64: ``{"name": N, "policies": [P]}``, exactly one policy."""
    _only(body, {"name", "policies"})
    policies = body.get("policies")
    if not isinstance(policies, list) or len(policies) != 1:
        raise exceptions.BadRequest(
            "Invalid input for server_group: policies must be a list of exactly one policy."
        )
    return _check_policy(req, policies[0])


def _check_policy(req: ComputeRequest, policy: Any) -> str:
    allowed = [AFFINITY, ANTI_AFFINITY]
    if req.at_least(SOFT_POLICIES):
        allowed += [SOFT_AFFINITY, SOFT_ANTI_AFFINITY]
    if policy not in allowed:
        raise exceptions.BadRequest(
            f"Invalid input for server_group: the policy must be one of {allowed}, not {policy!r}."
        )
    return str(policy)


def _only(body: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise exceptions.BadRequest(
            f"Invalid input for server_group: additional properties are not allowed ({unknown})."
        )


def _visible(req: ComputeRequest, conn: Connection, group_id: str, rule: str) -> RowMapping:
    """The group, if ``rule`` allows the caller on it (by default: its own project's, or any to
    an admin); another project's group is a 404, hiding that it exists."""
    group = store.get(conn, group_id)
    if group is None or not req.allowed(rule, {"project_id": group["project_id"]}):
        raise exceptions.NotFound(f"Instance group {group_id} could not be found.")
    return group


def _transform_group(req: ComputeRequest, conn: Connection, group: RowMapping) -> dict[str, Any]:
    """2.64: ``{"id", "name", "policy", "rules", "members", "project_id", "user_id"}``;
    before: ``{"id", "name", "policies": [P], "members", "metadata": {}}`` (+ owners at 2.13)."""
    view: dict[str, Any] = {"id": group["uuid"], "name": group["name"]}
    if req.at_least(SERVER_GROUP_POLICY_RULES):
        view["policy"] = group["policy"]
        view["rules"] = dict(group["rules"] or {})
    else:
        view["policies"] = [group["policy"]]
        view["metadata"] = {}
    view["members"] = store.members(conn, group["uuid"])
    if req.at_least(SERVER_GROUP_OWNERS):
        view["project_id"] = group["project_id"]
        view["user_id"] = group["user_id"]
    return view

"""Nova's security group proxies: /os-security-groups, /os-security-group-rules (gone from
microversion 2.36: a 404, as Nova answers), a server's groups (/servers/{id}/os-security-groups)
and the server actions ``addSecurityGroup`` and ``removeSecurityGroup``.

The groups and rules are the network service's (``/v2.0/security-groups``); these show them as
Nova did: a group with its ingress rules only, a rule with ``ip_protocol``, ``from_port`` and
``to_port`` (``-1`` for "any" of ICMP, 1 to 65535 for a TCP or UDP rule without ports),
``ip_range`` and the ``group`` it admits. Rules: ``os_compute_api:os-security-groups:*``
(readers read, members change). The domain is :mod:`berth.compute.security_groups`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute import security_groups as domain
from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:os-security-groups"
_LENGTH = 255


def _proxy(req: ComputeRequest, rule: str) -> None:
    if req.at_least(microversion.PROXIES_GONE):
        raise exceptions.NotFound("The security group proxy APIs are gone from 2.36.")
    req.authorize(f"{_RULE}:{rule}")


def index(req: ComputeRequest) -> Response:
    _proxy(req, "get")
    all_projects = req.is_admin and any(
        name == "all_tenants" and value.lower() not in ("0", "false", "off")
        for name, value in req.query_items
    )
    found = domain.list_groups(req.service, req.context, all_projects)
    names = _names(req, found)
    return req.respond({"security_groups": [_transform_group(g, names) for g in found]})


def delete_without_id(req: ComputeRequest) -> Response:
    """``DELETE /os-security-groups/``: no group has an empty id (404, as Nova answers)."""
    _proxy(req, "delete")
    raise exceptions.NotFound("Security group  not found: no id given.")


def show(req: ComputeRequest) -> Response:
    _proxy(req, "show")
    found = domain.get_group(req.service, req.context, req.param("security_group_id"))
    return req.respond({"security_group": _transform_group(found, _names(req, [found]))})


def create(req: ComputeRequest) -> Response:
    _proxy(req, "create")
    name, description = _name_and_description(req.resource_body("security_group"))
    made = domain.create_group(req.service, req.context, name, description)
    return req.respond({"security_group": _transform_group(made, _names(req, [made]))})


def update(req: ComputeRequest) -> Response:
    _proxy(req, "update")
    name, description = _name_and_description(req.resource_body("security_group"))
    changed = domain.update_group(
        req.service,
        req.context,
        req.param("security_group_id"),
        {"name": name, "description": description},
    )
    return req.respond({"security_group": _transform_group(changed, _names(req, [changed]))})


def delete(req: ComputeRequest) -> Response:
    _proxy(req, "delete")
    domain.delete_group(req.service, req.context, req.param("security_group_id"))
    return req.no_content(202)


def create_rule(req: ComputeRequest) -> Response:
    _proxy(req, "rule:create")
    made = domain.create_rule(req.service, req.context, req.resource_body("security_group_rule"))
    remote = made["remote_group_id"]
    names = domain.groups_by_id(req.service, [remote]) if remote else {}
    return req.respond({"security_group_rule": _transform_rule(made, names)})


def delete_rule(req: ComputeRequest) -> Response:
    _proxy(req, "rule:delete")
    domain.delete_rule(req.service, req.context, req.param("security_group_rule_id"))
    return req.no_content(202)


def server_index(req: ComputeRequest) -> Response:
    """``{"security_groups": [...]}``: the groups of the server's ports (every microversion)."""
    rule = f"{_RULE}:list"
    req.authorize(rule)
    found = domain.server_groups(
        req.service, req.context, req.param("server_id"), _may_see(req, rule)
    )
    names = _names(req, found)
    return req.respond({"security_groups": [_transform_group(g, names) for g in found]})


def add_to_server(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    """``{"addSecurityGroup": {"name": "web"}}``: 202."""
    rule = f"{_RULE}:add"
    req.authorize(rule)
    domain.add_to_server(
        req.service, req.context, server_id, _group_name(argument), _may_see(req, rule)
    )
    return req.no_content(202)


def remove_from_server(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    """``{"removeSecurityGroup": {"name": "web"}}``: 202."""
    rule = f"{_RULE}:remove"
    req.authorize(rule)
    domain.remove_from_server(
        req.service, req.context, server_id, _group_name(argument), _may_see(req, rule)
    )
    return req.no_content(202)


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    return lambda project_id: req.allowed(rule, {"project_id": project_id})


# -- bodies ------------------------------------------------------------------------------------


def _name_and_description(body: Mapping[str, Any]) -> tuple[str, str]:
    """Both required strings of at most 255 characters; the name not blank."""
    for field in ("name", "description"):
        value = body.get(field)
        if not isinstance(value, str):
            raise exceptions.BadRequest(f"Security group {field} is not a string or unicode.")
        if len(value) > _LENGTH:
            raise exceptions.BadRequest(
                f"Security group {field} should not be greater than {_LENGTH} characters."
            )
    if not body["name"].strip():
        raise exceptions.BadRequest("Security group name cannot be empty.")
    return body["name"], body["description"]


def _group_name(argument: Any) -> str:
    name = argument.get("name") if isinstance(argument, dict) else None
    if not isinstance(name, str) or not name.strip():
        raise exceptions.BadRequest("Missing parameter: name (the security group's name).")
    return name.strip()


# -- views -------------------------------------------------------------------------------------


def _names(req: ComputeRequest, groups: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The groups the groups' rules admit traffic from, by id (to name them)."""
    known = {group["id"]: group for group in groups}
    remote = {
        rule["remote_group_id"]
        for group in groups
        for rule in group["security_group_rules"]
        if rule["remote_group_id"] and rule["remote_group_id"] not in known
    }
    return {**known, **domain.groups_by_id(req.service, sorted(remote))}


def _transform_group(group: Mapping[str, Any], names: Mapping[str, Any]) -> dict[str, Any]:
    """``{"id", "name", "description", "tenant_id", "rules": [ingress rules]}``"""
    return {
        "id": group["id"],
        "name": group["name"],
        "description": group["description"],
        "tenant_id": group["project_id"],
        "rules": [
            _transform_rule(rule, names)
            for rule in group["security_group_rules"]
            if rule["direction"] == "ingress"
        ],
    }


def _transform_rule(rule: Mapping[str, Any], names: Mapping[str, Any]) -> dict[str, Any]:
    """``{"id", "parent_group_id", "ip_protocol", "from_port", "to_port", "ip_range":
    {"cidr"}, "group": {"name", "tenant_id"}}``"""
    protocol, low, high = rule["protocol"], rule["port_range_min"], rule["port_range_max"]
    if protocol and low is None and high is None:
        low, high = (1, 65535) if protocol.lower() in ("tcp", "udp") else (-1, -1)
    elif protocol and high is None:
        high = -1
    remote = names.get(rule["remote_group_id"]) if rule["remote_group_id"] else None
    return {
        "id": rule["id"],
        "parent_group_id": rule["security_group_id"],
        "ip_protocol": protocol,
        "from_port": low,
        "to_port": high,
        "ip_range": {"cidr": rule["remote_ip_prefix"]} if rule["remote_ip_prefix"] else {},
        "group": {"name": remote["name"], "tenant_id": remote["project_id"]} if remote else {},
    }

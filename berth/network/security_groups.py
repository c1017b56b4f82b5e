"""Security groups and their rules: what a request may say, who may do it, how they are shown.

Berth's hosts are simulated, so no data path enforces a rule; the groups, rules and the groups
of each port are kept as upstream's API keeps them. A group belongs to a project, whose readers
see it and whose members change it (admins see and change all). Every project has one group
named ``default``, made the first time the project needs one (it lists its groups, makes a
group, or makes a port with port security and no groups named): it lets everything out (IPv4
and IPv6) and everything in from its own members. Every other new group lets everything out.
No other group may be named ``default``; the default group is not renamed, and only an admin
deletes it. A group that ports are in is not deleted (409); deleting a group takes its rules and
the rules of other groups that name it as their remote group.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.common.db import Database
from berth.network import exceptions, policy, validate
from berth.network import security_group_rules as rules
from berth.network.store import security_groups as store

DEFAULT_NAME = "default"
_CREATE = {"name", "description", "stateful", "project_id", "tenant_id"}
_UPDATE = {"name", "description", "stateful"}
# Every new group lets everything out; the default group also lets in what its members send.
_EGRESS = (rules.Rule("egress", "IPv4"), rules.Rule("egress", "IPv6"))


def ensure_default(db: Database, project_id: str) -> None:
    """Make the project's default group, in a transaction of its own, if it has none yet."""
    if not project_id:
        return
    with db.read() as conn:
        if store.default_of(conn, project_id) is not None:
            return
    with db.write() as conn:
        default_group(conn, project_id)


def default_group(conn: Connection, project_id: str) -> str:
    """The id of the project's default group, made now if it has none. Of two transactions
    making it at once, the second finds the first's (the store's key decides)."""
    found = store.default_of(conn, project_id)
    if found is not None:
        return found
    group_id = str(uuid.uuid4())
    store.insert(
        conn,
        {
            "id": group_id,
            "project_id": project_id,
            "name": DEFAULT_NAME,
            "description": "Default security group",
            "stateful": True,
        },
    )
    if not store.claim_default(conn, project_id, group_id):
        store.delete(conn, group_id)
        winner = store.default_of(conn, project_id)
        assert winner is not None
        return winner
    from_members = tuple(
        rules.Rule("ingress", ethertype, remote_group_id=group_id) for ethertype in rules.ETHERTYPES
    )
    for rule in (*_EGRESS, *from_members):
        _insert_rule(conn, group_id, project_id, rule, "")
    return group_id


# -- groups ------------------------------------------------------------------------------------


def create_group(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str:
    validate.known(body, _CREATE, "security_group")
    validate.strings(body, ("name", "description"))
    project = validate.project_of(body, context.project_id or "")
    name = validate.string(body, "name", "")
    stateful = validate.boolean(body, "stateful", True)
    policy.require_member(context, project, "creating a security group")
    if name == DEFAULT_NAME:
        raise exceptions.SecurityGroupDefaultAlreadyExists("Default security group already exists.")
    default_group(conn, project)
    group_id = str(uuid.uuid4())
    store.insert(
        conn,
        {
            "id": group_id,
            "project_id": project,
            "name": name,
            "description": validate.string(body, "description", ""),
            "stateful": stateful,
        },
    )
    for rule in _EGRESS:
        _insert_rule(conn, group_id, project, rule, "")
    return group_id


def get_visible(conn: Connection, context: RequestContext, group_id: str) -> RowMapping:
    found = store.get(conn, group_id)
    if found is None or not policy.can_see(context, found["project_id"]):
        raise exceptions.SecurityGroupNotFound(group_id)
    return found


def update_group(
    conn: Connection, context: RequestContext, group_id: str, body: Mapping[str, Any]
) -> None:
    validate.known(body, _UPDATE, "security_group")
    validate.strings(body, ("name", "description"))
    found = get_visible(conn, context, group_id)
    policy.require_owner(context, found["project_id"], f"security group {group_id}")
    values: dict[str, Any] = {
        name: validate.string(body, name) for name in ("name", "description") if name in body
    }
    is_default = bool(store.default_ids(conn, [group_id]))
    if "name" in values and values["name"] != found["name"]:
        if is_default:
            raise exceptions.SecurityGroupCannotUpdateDefault(
                "Updating default security group not allowed."
            )
        if values["name"] == DEFAULT_NAME:
            raise exceptions.SecurityGroupDefaultAlreadyExists(
                "Default security group already exists."
            )
    if "stateful" in body:
        values["stateful"] = validate.boolean(body, "stateful", True)
        if values["stateful"] != found["stateful"] and store.ports_in(conn, group_id):
            raise exceptions.SecurityGroupInUse(
                f"Security Group {group_id} in use: its ports keep it "
                f"{'stateful' if found['stateful'] else 'stateless'}."
            )
    store.update(conn, group_id, values)


def delete_group(conn: Connection, context: RequestContext, group_id: str) -> None:
    found = get_visible(conn, context, group_id)
    policy.require_owner(context, found["project_id"], f"security group {group_id}")
    if store.default_ids(conn, [group_id]) and not policy.is_privileged(context):
        raise exceptions.SecurityGroupCannotRemoveDefault(
            "Insufficient rights for removing default security group."
        )
    if store.ports_in(conn, group_id):
        raise exceptions.SecurityGroupInUse(f"Security Group {group_id} in use.")
    store.delete(conn, group_id)


def views(conn: Connection, rows: Sequence[RowMapping]) -> list[dict[str, Any]]:
    """The API's view of each group, with its rules."""
    found = store.rules_of(conn, [row["id"] for row in rows])
    return [_view(row, found.get(row["id"], [])) for row in rows]


def _view(row: RowMapping, group_rules: Sequence[RowMapping]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "stateful": row["stateful"],
        "security_group_rules": [rule_view(rule) for rule in group_rules],
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


# -- rules -------------------------------------------------------------------------------------


def create_rule(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str:
    rule = rules.parse(body)
    validate.strings(body, ("description",))
    if body.get("security_group_id") is None:
        raise exceptions.BadRequest(
            "Failed to parse request. Required attribute 'security_group_id' not specified"
        )
    group_id = validate.uuid_value("security_group_id", body["security_group_id"])
    group = get_visible(conn, context, group_id)
    policy.require_owner(context, group["project_id"], f"security group {group_id}")
    if rule.remote_group_id is not None:
        get_visible(conn, context, rule.remote_group_id)
    project = validate.project_of(body, group["project_id"])
    if project != group["project_id"]:
        policy.require_privileged(context, "a rule owned by another project than its group's")
    # Marks the group changed first, which takes its row lock: its rule changes serialise.
    store.update(conn, group_id, {})
    return _insert_rule(conn, group_id, project, rule, validate.string(body, "description", ""))


def _insert_rule(
    conn: Connection, group_id: str, project_id: str, rule: rules.Rule, description: str
) -> str:
    rule_id = str(uuid.uuid4())
    clash = store.insert_rule(
        conn,
        {
            "id": rule_id,
            "security_group_id": group_id,
            "project_id": project_id,
            "description": description,
            "direction": rule.direction,
            "ethertype": rule.ethertype,
            "protocol": rule.protocol,
            "port_range_min": rule.port_range_min,
            "port_range_max": rule.port_range_max,
            "remote_ip_prefix": rule.remote_ip_prefix,
            "remote_group_id": rule.remote_group_id,
            "fingerprint": rule.fingerprint(),
        },
    )
    if clash is not None:
        raise exceptions.SecurityGroupRuleExists(
            f"Security group rule already exists. Rule id is {clash}."
        )
    return rule_id


def get_rule(conn: Connection, context: RequestContext, rule_id: str) -> RowMapping:
    """A rule the caller sees: one of its project's, or of a group its project owns."""
    found = store.get_rule(conn, rule_id)
    if found is None or not _rule_visible(conn, context, found):
        raise exceptions.SecurityGroupRuleNotFound(rule_id)
    return found


def _rule_visible(conn: Connection, context: RequestContext, rule: RowMapping) -> bool:
    if policy.can_see(context, rule["project_id"]):
        return True
    group = store.get(conn, rule["security_group_id"])
    return group is not None and policy.can_see(context, group["project_id"])


def delete_rule(conn: Connection, context: RequestContext, rule_id: str) -> None:
    found = get_rule(conn, context, rule_id)
    group = store.get(conn, found["security_group_id"])
    owners = {found["project_id"], group["project_id"] if group is not None else ""}
    policy.require_owner(context, owners, f"security group rule {rule_id}")
    store.update(conn, found["security_group_id"], {})
    store.delete_rule(conn, rule_id)


def rule_view(row: RowMapping) -> dict[str, Any]:
    return {
        "id": row["id"],
        "security_group_id": row["security_group_id"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "description": row["description"],
        "direction": row["direction"],
        "ethertype": row["ethertype"],
        "protocol": row["protocol"],
        "port_range_min": row["port_range_min"],
        "port_range_max": row["port_range_max"],
        "remote_ip_prefix": row["remote_ip_prefix"],
        "normalized_cidr": rules.Rule(
            row["direction"], remote_ip_prefix=row["remote_ip_prefix"]
        ).normalized_cidr,
        "remote_group_id": row["remote_group_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


# -- ports -------------------------------------------------------------------------------------


def join_groups(
    conn: Connection,
    context: RequestContext,
    port_id: str,
    project_id: str,
    asked: Any,
    port_security: bool,
    device_owner: str,
) -> list[str] | None:
    """Put a new port in its groups: those asked for, else its project's default group when
    port security is on (ports of the network's own devices, ``network:*``, get none). Returns
    the port's groups as a read of them gives them (sorted), None when they are not known
    without one."""
    if asked is None:
        if not port_security or device_owner.startswith("network:"):
            return []
        # The default group found and joined in one statement, once the project has one.
        joined = store.join_default_group(conn, port_id, project_id)
        if joined == []:
            joined = [default_group(conn, project_id)]
            store.add_groups_of_port(conn, port_id, joined)
        return joined
    groups = checked_groups(conn, context, project_id, asked, port_security)
    store.add_groups_of_port(conn, port_id, groups)
    # Canonical UUIDs (``checked_groups``), which every collation orders as Python does.
    return sorted(set(groups))


def checked_groups(
    conn: Connection, context: RequestContext, project_id: str, asked: Any, port_security: bool
) -> list[str]:
    """The ``security_groups`` of a port body: ids of groups of the port's project (any
    project's for an admin); none unless port security is on."""
    if not isinstance(asked, list):
        raise exceptions.InvalidInput(
            f"Invalid input for security_groups. Reason: '{asked}' is not a list."
        )
    ids = list(dict.fromkeys(validate.uuid_value("security_groups", g) for g in asked))
    if ids and not port_security:
        raise exceptions.PortSecurityAndIPRequiredForSecurityGroups(
            "Port security must be enabled and port must have an IP address in order to use "
            "security groups."
        )
    for group_id in ids:
        found = store.get(conn, group_id)
        if found is None or not (
            found["project_id"] == project_id or policy.is_privileged(context)
        ):
            raise exceptions.SecurityGroupNotFound(group_id)
    return ids

"""QoS policies and their rules: what a create or update may say, who may do it, how they are shown.

A policy belongs to a project; others see it when it is shared with them through RBAC
(``rbac``): ``shared: true`` is the entry that shares it with every project. Only an admin
creates, changes and deletes policies and their rules (upstream's default rules).

A policy holds at most one rule per (type, direction), a constraint of the store; a minimum
packet rate rule for ``any`` direction and one for a single direction exclude each other, a
check made here under the policy's row lock (every rule change first updates its policy). A
policy named by a network or a port cannot be deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.common.context import RequestContext
from berth.network import exceptions, policy, rbac, validate
from berth.network.store import qos as store

# The largest rate a rule may ask for (the API's integer range).
MAX_RATE = 2**31 - 1

_CREATE = {"name", "description", "shared", "is_default", "project_id", "tenant_id"}
_UPDATE = {"name", "description", "shared", "is_default"}


@dataclass(frozen=True)
class RuleType:
    """One kind of rule: the rates it holds (the first ones required) and its directions."""

    name: str
    rates: tuple[str, ...]
    required: tuple[str, ...]
    directions: tuple[str, ...]

    @property
    def member(self) -> str:
        """The key of one rule in a request or response: ``bandwidth_limit_rule``."""
        return f"{self.name}_rule"

    @property
    def collection(self) -> str:
        return f"{self.name}_rules"


BANDWIDTH_LIMIT = RuleType(
    "bandwidth_limit", ("max_kbps", "max_burst_kbps"), ("max_kbps",), ("egress", "ingress")
)
MINIMUM_BANDWIDTH = RuleType(
    "minimum_bandwidth", ("min_kbps",), ("min_kbps",), ("egress", "ingress")
)
MINIMUM_PACKET_RATE = RuleType(
    "minimum_packet_rate", ("min_kpps",), ("min_kpps",), ("any", "egress", "ingress")
)
RULE_TYPES = {kind.name: kind for kind in (BANDWIDTH_LIMIT, MINIMUM_BANDWIDTH, MINIMUM_PACKET_RATE)}
# Rates a rule of a type has without asking (its other rates are required).
_DEFAULT_RATES = {"max_burst_kbps": 0}
# The mechanism drivers of Berth's two kinds of agent; both take every rule type Berth has.
RULE_TYPE_DRIVERS = ("openvswitch", "sriovnicswitch")


def rule_type_details(context: RequestContext, name: str) -> dict[str, Any]:
    """What a rule of a type may say, per driver: each rate's range and the directions
    (upstream shows it to admins only)."""
    policy.require_privileged(context, "get_rule_type")
    kind = RULE_TYPES.get(name)
    if kind is None:
        raise exceptions.NotFound(f"QoS rule type {name} could not be found.")
    parameters = [
        {
            "parameter_name": rate,
            "parameter_type": "range",
            "parameter_values": {"start": 0, "end": MAX_RATE},
        }
        for rate in kind.rates
    ]
    parameters.append(
        {
            "parameter_name": "direction",
            "parameter_type": "choices",
            "parameter_values": list(kind.directions),
        }
    )
    return {
        "type": kind.name,
        "drivers": [
            {"name": driver, "supported_parameters": parameters} for driver in RULE_TYPE_DRIVERS
        ],
    }


@dataclass(frozen=True)
class QosRule:
    """A rule as the port code needs it to build resource requests; rates a type lacks are None."""

    rule_type: str
    direction: str
    min_kbps: int | None = None
    min_kpps: int | None = None
    max_kbps: int | None = None
    max_burst_kbps: int | None = None


def rules_of(conn: Connection, policy_id: str) -> list[QosRule]:
    """The policy's rules, by type then direction (none for a policy that does not exist)."""
    return [
        QosRule(
            rule_type=row["rule_type"],
            direction=row["direction"],
            min_kbps=row["min_kbps"],
            min_kpps=row["min_kpps"],
            max_kbps=row["max_kbps"],
            max_burst_kbps=row["max_burst_kbps"],
        )
        for row in store.rules_of_policies(conn, [policy_id]).get(policy_id, [])
    ]


# -- policies -----------------------------------------------------------------------------------


def create_policy(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str:
    # The body is checked before the caller's rights, as upstream: a bad value is a 400 to all.
    validate.known(body, _CREATE, "policy")
    values = {
        "project_id": validate.project_of(body, context.project_id or ""),
        "name": validate.string(body, "name", ""),
        "description": validate.string(body, "description", ""),
        "is_default": validate.boolean(body, "is_default", False),
    }
    shared = validate.boolean(body, "shared", False)
    policy.require_privileged(context, "create_policy")
    if values["is_default"]:
        _check_no_default(conn, values["project_id"])
    policy_id = str(uuid.uuid4())
    store.insert_policy(conn, {"id": policy_id, **values})
    if shared:
        rbac.share_with_all(conn, rbac.QOS_POLICY, policy_id, values["project_id"])
    return policy_id


def get_visible(conn: Connection, context: RequestContext, policy_id: str) -> RowMapping:
    """A policy the caller sees: its project's, or one shared with the caller's project (or
    with every project) through RBAC; 404 otherwise."""
    found = store.get_policy(conn, policy_id)
    if found is None or not policy.can_see(
        context,
        found["project_id"],
        bool(rbac.granted(conn, rbac.QOS_POLICY, [policy_id], context)),
    ):
        raise exceptions.QosPolicyNotFound(policy_id)
    return found


def update_policy(
    conn: Connection, context: RequestContext, policy_id: str, body: Mapping[str, Any]
) -> None:
    validate.known(body, _UPDATE, "policy")
    values: dict[str, Any] = {}
    for name in ("name", "description"):
        if name in body:
            values[name] = validate.string(body, name)
    if "is_default" in body:
        values["is_default"] = validate.boolean(body, "is_default", False)
    shared = validate.boolean(body, "shared", False) if "shared" in body else None
    found = _changeable(conn, context, policy_id, "update_policy")
    if values.get("is_default") and not found["is_default"]:
        _check_no_default(conn, found["project_id"])
    if shared:
        rbac.share_with_all(conn, rbac.QOS_POLICY, policy_id, found["project_id"])
    elif shared is not None:
        rbac.unshare_with_all(conn, rbac.QOS_POLICY, policy_id)
    # Bumps the revision even when only sharing changed.
    store.update_policy(conn, policy_id, values)


def delete_policy(conn: Connection, context: RequestContext, policy_id: str) -> None:
    _changeable(conn, context, policy_id, "delete_policy")
    users = store.users_of(conn, policy_id)
    if users:
        kind, user_id, _ = users[0]
        raise exceptions.QosPolicyInUse(_in_use(policy_id, kind, user_id))
    try:
        with conn.begin_nested():
            store.delete_policy(conn, policy_id)
    except IntegrityError:
        # A network or port took the policy since the check (the foreign key refuses).
        raise exceptions.QosPolicyInUse(_in_use(policy_id, "network or port", "")) from None
    rbac.forget(conn, rbac.QOS_POLICY, policy_id)


def _changeable(conn: Connection, context: RequestContext, policy_id: str, rule: str) -> RowMapping:
    """The policy, if the caller sees it (else 404) and may change it and its rules: only an
    admin, upstream's default (else 403 naming upstream's ``rule``)."""
    found = get_visible(conn, context, policy_id)
    policy.require_privileged(context, rule)
    return found


def _check_no_default(conn: Connection, project_id: str) -> None:
    if store.default_policy_of(conn, project_id) is not None:
        raise exceptions.QoSPolicyDefaultAlreadyExists(
            f"A default QoS policy exists for project {project_id}."
        )


def _in_use(policy_id: str, kind: str, user_id: str) -> str:
    return f"QoS policy {policy_id} is used by {kind} {user_id}".rstrip() + "."


def views(
    conn: Connection, context: RequestContext, rows: Sequence[RowMapping]
) -> list[dict[str, Any]]:
    """The API's view of each policy, with its rules read in bulk. ``shared`` is whether it is
    shared with the caller's project (upstream computes it for each caller, too)."""
    ids = [row["id"] for row in rows]
    rules = store.rules_of_policies(conn, ids)
    shared = rbac.granted(conn, rbac.QOS_POLICY, ids, context)
    return [_view(row, rules.get(row["id"], []), row["id"] in shared) for row in rows]


def _view(row: RowMapping, rules: Sequence[RowMapping], shared: bool) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "shared": shared,
        "is_default": row["is_default"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "rules": [
            {**rule_view(rule), "qos_policy_id": row["id"], "type": rule["rule_type"]}
            for rule in rules
        ],
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


# -- rules --------------------------------------------------------------------------------------


def rule_view(row: RowMapping) -> dict[str, Any]:
    """``{"id": ..., "max_kbps": 1000, "max_burst_kbps": 0, "direction": "egress"}``"""
    kind = RULE_TYPES[row["rule_type"]]
    return {
        "id": row["id"],
        **{rate: row[rate] for rate in kind.rates},
        "direction": row["direction"],
    }


def get_rule(
    conn: Connection, context: RequestContext, policy_id: str, kind: RuleType, rule_id: str
) -> RowMapping:
    if not _rules_readable(conn, context, policy_id):
        raise exceptions.QosRuleNotFound(rule_id, policy_id)
    return _rule(conn, policy_id, kind, rule_id)


def list_rules(
    conn: Connection, context: RequestContext, policy_id: str, kind: RuleType
) -> list[RowMapping]:
    if not _rules_readable(conn, context, policy_id):
        return []
    return store.rules_of_policies(conn, [policy_id], kind.name).get(policy_id, [])


def _rules_readable(conn: Connection, context: RequestContext, policy_id: str) -> bool:
    """Rules are read through their policy's project (upstream's ``get_policy_*_rule``: an
    admin or a reader of the policy's project); others who see a shared policy read its rules
    in the policy's ``rules``. A policy the caller does not see at all is a 404."""
    found = get_visible(conn, context, policy_id)
    return policy.can_see(context, found["project_id"])


def create_rule(
    conn: Connection,
    context: RequestContext,
    policy_id: str,
    kind: RuleType,
    body: Mapping[str, Any],
) -> str:
    validate.known(body, {*kind.rates, "direction"}, kind.member)
    for name in kind.required:
        if name not in body:
            raise exceptions.BadRequest(
                f"Failed to parse request. Required attribute '{name}' not specified"
            )
    values = {
        name: _rate(body, name) if name in body else _DEFAULT_RATES[name] for name in kind.rates
    }
    direction = validate.one_of(body, "direction", kind.directions, "egress")
    # Upstream judges a creation before it looks for the policy: a member is refused (403)
    # even on a policy it cannot see, where an update or deletion of a rule is a 404.
    policy.require_privileged(context, f"create_policy_{kind.member}")
    _changeable(conn, context, policy_id, f"create_policy_{kind.member}")
    # Updating the policy first takes its row lock: rule changes of one policy serialise.
    store.update_policy(conn, policy_id, {})
    _check_directions(conn, policy_id, kind, direction, None)
    rule_id = str(uuid.uuid4())
    row = {"id": rule_id, "policy_id": policy_id, "rule_type": kind.name, "direction": direction}
    with _one_per_direction(conn, policy_id, kind, direction):
        store.insert_rule(conn, {**row, **values})
    return rule_id


def update_rule(
    conn: Connection,
    context: RequestContext,
    policy_id: str,
    kind: RuleType,
    rule_id: str,
    body: Mapping[str, Any],
) -> None:
    validate.known(body, {*kind.rates, "direction"}, kind.member)
    values: dict[str, Any] = {name: _rate(body, name) for name in kind.rates if name in body}
    asked = validate.one_of(body, "direction", kind.directions, None)
    _changeable(conn, context, policy_id, f"update_policy_{kind.member}")
    found = _rule(conn, policy_id, kind, rule_id)
    direction = asked or found["direction"]
    values["direction"] = direction
    store.update_policy(conn, policy_id, {})
    _check_directions(conn, policy_id, kind, direction, rule_id)
    with _one_per_direction(conn, policy_id, kind, direction):
        store.update_rule(conn, rule_id, values)


def delete_rule(
    conn: Connection, context: RequestContext, policy_id: str, kind: RuleType, rule_id: str
) -> None:
    _changeable(conn, context, policy_id, f"delete_policy_{kind.member}")
    _rule(conn, policy_id, kind, rule_id)
    store.update_policy(conn, policy_id, {})
    store.delete_rule(conn, rule_id)


def _rule(conn: Connection, policy_id: str, kind: RuleType, rule_id: str) -> RowMapping:
    found = store.get_rule(conn, rule_id)
    if found is None or found["policy_id"] != policy_id or found["rule_type"] != kind.name:
        raise exceptions.QosRuleNotFound(rule_id, policy_id)
    return found


def _rate(body: Mapping[str, Any], name: str) -> int:
    if body.get(name) is None:
        raise exceptions.InvalidInput(
            f"Invalid input for {name}. Reason: 'None' is not an integer."
        )
    return int(validate.integer(body, name, None, 0, MAX_RATE))


def _check_directions(
    conn: Connection, policy_id: str, kind: RuleType, direction: str, rule_id: str | None
) -> None:
    """A packet rate rule for ``any`` direction and a directed one exclude each other."""
    if kind is not MINIMUM_PACKET_RATE:
        return
    others = [
        row["direction"]
        for row in store.rules_of_policies(conn, [policy_id], kind.name).get(policy_id, [])
        if row["id"] != rule_id
    ]
    clash = any(d != "any" for d in others) if direction == "any" else "any" in others
    if clash:
        raise exceptions.QosRuleConflict(
            f"A {kind.name} rule with direction {direction} cannot be in QoS policy {policy_id} "
            f"beside one with direction {'any' if direction != 'any' else 'egress or ingress'}."
        )


@contextmanager
def _one_per_direction(
    conn: Connection, policy_id: str, kind: RuleType, direction: str
) -> Iterator[None]:
    """Write a rule; the store's (policy, type, direction) key refuses a second one."""
    try:
        with conn.begin_nested():
            yield
    except IntegrityError:
        raise exceptions.QosRuleConflict(
            f"QoS policy {policy_id} already has a {kind.name} rule with direction {direction}."
        ) from None

"""RBAC policies: an object's owner grants other projects (one, or every one with ``*``) an
action on it. The objects are networks and QoS policies. With ``access_as_shared`` a project
granted a network sees it and its subnets and may make ports on it; a project granted a QoS
policy sees it and may attach it to its networks and ports. ``shared: true`` on either is the
wildcard entry. With ``access_as_external`` (networks only) a project sees the network, as
``router:external: true`` (not its subnets); a network's ``router:external: true`` is that
action's wildcard entry.

Who may do what follows upstream's default rules: a project's members create, retarget and
delete the entries their project owns, on objects their project owns (an entry on another's
object is a 400); only an admin grants to every project (``create_rbac_policy:target_tenant``,
``update_rbac_policy:target_tenant``); an entry is seen by its own project's readers and admins,
not by the project it targets. An entry that a resource of the target project needs (a port on
the network; a network or port naming the QoS policy) and that no other entry replaces cannot be
removed or retargeted: 409 ``RbacPolicyInUse``. As upstream, the owner's own ports never hold a
network's entry, while the owner's own networks and ports do hold a QoS policy's wildcard entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.network import exceptions, policy, validate
from berth.network.store import networks as network_store
from berth.network.store import qos as qos_store
from berth.network.store import rbac as store
from berth.network.store import routers as router_store

WILDCARD = store.WILDCARD
ACCESS_AS_SHARED = "access_as_shared"
ACCESS_AS_EXTERNAL = "access_as_external"
NETWORK = "network"
# What a project may be granted on a network (either lets it see the network).
NETWORK_ACTIONS = (ACCESS_AS_SHARED, ACCESS_AS_EXTERNAL)
QOS_POLICY = "qos_policy"

_CREATE = {
    "object_type", "object_id", "action", "target_tenant", "target_project", "project_id",
    "tenant_id",
}  # fmt: skip
_UPDATE = {"target_tenant", "target_project"}


@dataclass(frozen=True)
class ObjectType:
    """A kind of object entries may grant: its actions, how to find its owner (None: there is
    no such object), which projects' resources use it under an action, and how to mark it
    changed (an entry's change is a change of the object: its revision number grows)."""

    name: str
    actions: tuple[str, ...]
    owner: Callable[[Connection, str], str | None]
    bound_projects: Callable[[Connection, str, str], set[str]]
    touch: Callable[[Connection, str], None]


def _network_owner(conn: Connection, network_id: str) -> str | None:
    found = network_store.get_network(conn, network_id)
    return None if found is None else str(found["project_id"])


def _network_bound(conn: Connection, network_id: str, action: str) -> set[str]:
    """Projects with ports on the shared network; the owner's own ports need no entry
    (upstream's rule for networks: a self-share entry may always go). An external network is
    used by the projects of the routers with their gateway on it and of its floating IPs."""
    if action == ACCESS_AS_EXTERNAL:
        return router_store.external_users(conn, network_id)
    return network_store.port_projects(conn, network_id) - {_network_owner(conn, network_id)}


def _qos_owner(conn: Connection, policy_id: str) -> str | None:
    found = qos_store.get_policy(conn, policy_id)
    return None if found is None else str(found["project_id"])


def _qos_bound(conn: Connection, policy_id: str, action: str) -> set[str]:
    """Projects whose networks and ports name the policy, the owner's included (upstream's
    generic rule, which QoS policies follow)."""
    return {project for _, _, project in qos_store.users_of(conn, policy_id)}


OBJECT_TYPES = {
    NETWORK: ObjectType(
        NETWORK,
        NETWORK_ACTIONS,
        _network_owner,
        _network_bound,
        lambda conn, network_id: network_store.update_network(conn, network_id, {}),
    ),
    QOS_POLICY: ObjectType(
        QOS_POLICY,
        (ACCESS_AS_SHARED,),
        _qos_owner,
        _qos_bound,
        lambda conn, policy_id: qos_store.update_policy(conn, policy_id, {}),
    ),
}


# -- what other code asks ----------------------------------------------------------------------


def granted(
    conn: Connection,
    object_type: str,
    ids: Collection[str],
    context: RequestContext,
    action: str = ACCESS_AS_SHARED,
) -> set[str]:
    """Which of ``ids`` are granted (shared, by default) to the caller's project or to every
    project."""
    return store.granted_ids(conn, object_type, action, context.project_id or "", ids)


def grants(
    conn: Connection, object_type: str, ids: Collection[str], context: RequestContext
) -> Mapping[str, frozenset[str]]:
    """Under each action, which of ``ids`` are granted to the caller's project or to every
    project (one statement for every action)."""
    return store.grants(conn, object_type, context.project_id or "", ids)


def share_with_all(
    conn: Connection,
    object_type: str,
    object_id: str,
    owner: str,
    action: str = ACCESS_AS_SHARED,
) -> None:
    """Add the wildcard entry (``shared: true``, or a network's ``router:external: true``),
    unless it is there already."""
    store.insert(conn, _entry(owner, object_type, object_id, action, WILDCARD))


def unshare_with_all(
    conn: Connection, object_type: str, object_id: str, action: str = ACCESS_AS_SHARED
) -> None:
    """Remove the wildcard entry (``shared: false``, ``router:external: false``): 409 if a
    project still needs it."""
    for entry in store.of_object(conn, object_type, object_id, action):
        if entry["target_project"] == WILDCARD:
            _check_removable(conn, entry)
            store.delete(conn, entry["id"])


def forget(conn: Connection, object_type: str, object_id: str) -> None:
    """The object is deleted: its entries go with it."""
    store.delete_of_object(conn, object_type, object_id)


# -- the API's entries ---------------------------------------------------------------------------


def create_entry(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str:
    validate.known(body, _CREATE, "rbac_policy")
    kind = OBJECT_TYPES[validate.one_of(body, "object_type", OBJECT_TYPES)]
    object_id = validate.uuid_value("object_id", body.get("object_id"))
    action = validate.one_of(body, "action", kind.actions)
    target = _target(body, required=True)
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "create_rbac_policy for another project")
    policy.require_member(context, project, "create_rbac_policy")
    if target == WILDCARD:
        policy.require_privileged(context, "create_rbac_policy:target_tenant '*'")
    _check_owner(conn, context, kind, object_id)
    entry = _entry(project, kind.name, object_id, action, target)
    if not store.insert(conn, entry):
        raise exceptions.DuplicateRbacPolicy(
            f"An RBAC policy granting {action} on {kind.name} {object_id} to {target} exists "
            "already."
        )
    kind.touch(conn, object_id)
    return str(entry["id"])


def get_visible(conn: Connection, context: RequestContext, entry_id: str) -> RowMapping:
    """An entry its project's readers and admins see (404 for others)."""
    found = store.get(conn, entry_id)
    if found is None or not policy.can_see(context, found["project_id"]):
        raise exceptions.RbacPolicyNotFound(entry_id)
    return found


def update_entry(
    conn: Connection, context: RequestContext, entry_id: str, body: Mapping[str, Any]
) -> None:
    """Point an entry at another project: the old target loses it as a removal would."""
    validate.known(body, _UPDATE, "rbac_policy")
    target = _target(body, required=False)
    found = get_visible(conn, context, entry_id)
    policy.require_owner(context, found["project_id"], f"RBAC policy {entry_id}")
    if target is None or target == found["target_project"]:
        return
    if target == WILDCARD:
        policy.require_privileged(context, "update_rbac_policy:target_tenant '*'")
    kind = OBJECT_TYPES[found["object_type"]]
    _check_owner(conn, context, kind, found["object_id"])
    _check_removable(conn, found)
    if not store.update_target(conn, entry_id, target):
        raise exceptions.DuplicateRbacPolicy(
            f"An RBAC policy granting {found['action']} on {found['object_type']} "
            f"{found['object_id']} to {target} exists already."
        )
    kind.touch(conn, found["object_id"])


def delete_entry(conn: Connection, context: RequestContext, entry_id: str) -> None:
    found = get_visible(conn, context, entry_id)
    policy.require_owner(context, found["project_id"], f"RBAC policy {entry_id}")
    _check_removable(conn, found)
    store.delete(conn, entry_id)
    OBJECT_TYPES[found["object_type"]].touch(conn, found["object_id"])


def view(row: RowMapping) -> dict[str, Any]:
    """``{"id", "project_id", "tenant_id", "object_type", "object_id", "action",
    "target_tenant"}``"""
    return {
        "id": row["id"],
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "object_type": row["object_type"],
        "object_id": row["object_id"],
        "action": row["action"],
        "target_tenant": row["target_project"],
    }


def _entry(
    project: str, object_type: str, object_id: str, action: str, target: str
) -> dict[str, str]:
    return {
        "id": str(uuid.uuid4()),
        "project_id": project,
        "object_type": object_type,
        "object_id": object_id,
        "action": action,
        "target_project": target,
    }


def _target(body: Mapping[str, Any], required: bool) -> str | None:
    """``target_tenant`` (or the newer ``target_project``): a project id or ``*``."""
    name = "target_project" if "target_project" in body else "target_tenant"
    if name not in body:
        if required:
            raise exceptions.BadRequest(
                "Failed to parse request. Required attribute 'target_tenant' not specified"
            )
        return None
    value = validate.string(body, name)
    if not value:
        raise exceptions.InvalidInput(f"Invalid input for {name}. Reason: it is empty.")
    return str(value)


def _check_owner(
    conn: Connection, context: RequestContext, kind: ObjectType, object_id: str
) -> None:
    """Only the object's owner (or an admin) grants it; the object must exist. Both refusals
    are 400, as upstream's, so a project learns nothing of others' objects."""
    owner = kind.owner(conn, object_id)
    if owner is None:
        raise exceptions.InvalidInput(f"Invalid input: {kind.name} {object_id} does not exist.")
    if owner != context.project_id and not policy.is_privileged(context):
        raise exceptions.InvalidInput(
            "Invalid input: only admins can manipulate policies on objects they do not own."
        )


def _check_removable(conn: Connection, entry: RowMapping) -> None:
    """Refuse to take the object away from a project whose resources use it: another entry
    must still grant it to every project that uses it under this one."""
    kind = OBJECT_TYPES[entry["object_type"]]
    others = {
        other["target_project"]
        for other in store.of_object(conn, kind.name, entry["object_id"], entry["action"])
        if other["id"] != entry["id"]
    }
    if WILDCARD in others:
        return
    bound = kind.bound_projects(conn, entry["object_id"], entry["action"])
    needing = (
        bound - others if entry["target_project"] == WILDCARD else bound & {entry["target_project"]}
    )
    if needing:
        raise exceptions.RbacPolicyInUse(
            f"RBAC policy on {kind.name} {entry['object_id']} cannot be removed because other "
            f"objects depend on it: resources of project(s) {', '.join(sorted(needing))} use it."
        )

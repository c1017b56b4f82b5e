"""Networks and segments: what a create or update may say, and how a network is shown.

A network has one or more segments. Without provider attributes it gets one overlay segment
(``tenant_network_type``) with the lowest free VNI; an operator may give ``provider:*`` for one
segment or ``segments`` for several (a multi-segment, possibly routed, network). Two networks can
never share a segment: the store's unique allocation key refuses the second.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.common.context import RequestContext
from berth.config import NetworkSettings
from berth.network import exceptions, policy, qos, rbac, validate
from berth.network.store import networks as store
from berth.network.store import ports as port_store
from berth.network.store import qos as qos_store
from berth.network.store import routers as router_store

NETWORK_TYPES = ("flat", "vlan", "vxlan", "geneve")
OVERLAYS = ("vxlan", "geneve")
MAX_VLAN = 4094
MAX_VNI = 2**24 - 1
PROVIDER = ("provider:network_type", "provider:physical_network", "provider:segmentation_id")

_CREATE = {
    "name", "description", "admin_state_up", "shared", "router:external", "mtu",
    "qos_policy_id", "project_id", "tenant_id", "segments", "port_security_enabled",
    "availability_zone_hints", "is_default", *PROVIDER,
}  # fmt: skip
_UPDATE = {"name", "description", "admin_state_up", "shared", "router:external", "mtu", "qos_policy_id",
           "port_security_enabled", "is_default"}  # fmt: skip
# String attributes upstream limits to 255 characters.
STRINGS = ("name", "description")
_OPERATOR_ONLY = ("shared", "router:external", "segments", *PROVIDER)


def segment_key(
    network_type: str, physical_network: str | None, segmentation_id: int | None
) -> str:
    return f"{network_type}:{physical_network or ''}:{'' if segmentation_id is None else segmentation_id}"


def check_segment(
    network_type: Any, physical_network: Any, segmentation_id: Any
) -> tuple[str, str | None, int | None]:
    """A segment's (type, physical network, segmentation id), or a 400 saying what is wrong."""
    kind = validate.one_of({"network_type": network_type}, "network_type", NETWORK_TYPES)
    physnet = validate.string({"physical_network": physical_network}, "physical_network", None, 64)
    high = MAX_VLAN if kind == "vlan" else MAX_VNI
    segid = validate.integer({"segmentation_id": segmentation_id}, "segmentation_id", None, 1, high)
    if kind in ("flat", "vlan") and not physnet:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: physical_network required for {kind} provider network."
        )
    if kind in OVERLAYS and physnet:
        raise exceptions.InvalidInput(
            f"Invalid input for operation: physical_network not allowed for {kind} provider network."
        )
    if kind == "flat" and segid is not None:
        raise exceptions.InvalidInput(
            "Invalid input for operation: segmentation_id not allowed for flat network type."
        )
    if kind == "vlan" and segid is None:
        raise exceptions.InvalidInput(
            "Invalid input for operation: segmentation_id required for VLAN provider network "
            "(no tenant VLAN ranges are configured)."
        )
    return kind, physnet or None, segid


def mtu_of(settings: NetworkSettings, segment_types: Sequence[str]) -> int:
    """The largest MTU every segment can carry: overlays lose their encapsulation overhead."""
    return min(
        settings.global_physnet_mtu - (settings.tunnel_overhead if kind in OVERLAYS else 0)
        for kind in segment_types
    )


def create_network(
    conn: Connection, context: RequestContext, settings: NetworkSettings, body: Mapping[str, Any]
) -> str:
    validate.known(body, _CREATE, "network")
    validate.strings(body, STRINGS)
    policy.check_attributes(context, body, _OPERATOR_ONLY)
    project = validate.project_of(body, context.project_id or "")
    if project != context.project_id:
        policy.require_privileged(context, "creating a network for another project")
    policy.require_member(context, project, "creating a network")
    wanted = _requested_segments(body)
    shared = validate.boolean(body, "shared", False)
    external = validate.boolean(body, "router:external", False)
    network_id = str(uuid.uuid4())
    qos_policy_id = (
        qos_policy_of(conn, context, body)
        if "qos_policy_id" in body
        else qos_store.default_policy_of(conn, project)
    )
    natural = mtu_of(settings, [kind for kind, _, _ in wanted] or [settings.tenant_network_type])
    mtu = validate.integer(body, "mtu", natural, 68, natural, nullable=False)
    store.insert_network(conn, {
        "id": network_id,
        "project_id": project,
        "name": validate.string(body, "name", ""),
        "description": validate.string(body, "description", ""),
        "admin_state_up": validate.boolean(body, "admin_state_up", True),
        "status": "ACTIVE",
        "mtu": mtu,
        "qos_policy_id": qos_policy_id,
        "port_security_enabled": validate.boolean(body, "port_security_enabled", True),
    })  # fmt: skip
    if shared:
        rbac.share_with_all(conn, rbac.NETWORK, network_id, project)
    if external:
        rbac.share_with_all(conn, rbac.NETWORK, network_id, project, rbac.ACCESS_AS_EXTERNAL)
    if not wanted:
        add_segment(conn, network_id, settings.tenant_network_type, None, None)
    for kind, physnet, segid in wanted:
        add_segment(conn, network_id, kind, physnet, segid)
    return network_id


def _requested_segments(body: Mapping[str, Any]) -> list[tuple[str, str | None, int | None]]:
    given = [name for name in PROVIDER if name in body]
    if given and "segments" in body:
        raise exceptions.InvalidInput("Segments and provider values cannot both be set.")
    if given:
        return [check_segment(*(body.get(name) for name in PROVIDER))]
    listed = body.get("segments")
    if listed is None:
        return []
    if not isinstance(listed, list) or not listed or not all(isinstance(s, dict) for s in listed):
        raise exceptions.InvalidInput(
            "Invalid input for segments. Reason: a non-empty list of objects is expected."
        )
    found = []
    for item in listed:
        validate.known(item, PROVIDER, "segment")
        found.append(check_segment(*(item.get(name) for name in PROVIDER)))
    keys = [segment_key(*s) for s in found if not (s[0] in OVERLAYS and s[2] is None)]
    if len(set(keys)) < len(keys):
        raise exceptions.InvalidInput("Duplicate segment entry in request.")
    return found


def add_segment(
    conn: Connection,
    network_id: str,
    network_type: str,
    physical_network: str | None,
    segmentation_id: int | None,
    name: str = "",
    description: str = "",
) -> str:
    """Add a segment to a network, taking the lowest free VNI for an overlay without one."""
    segment_id = str(uuid.uuid4())
    index = len(store.segments_of(conn, [network_id]).get(network_id, []))
    if segmentation_id is None and network_type in OVERLAYS:
        segmentation_id = _free_vni(conn, network_type)
    key = segment_key(network_type, physical_network, segmentation_id)
    values = {
        "id": segment_id,
        "network_id": network_id,
        "name": name,
        "description": description,
        "network_type": network_type,
        "physical_network": physical_network,
        "segmentation_id": segmentation_id,
        "segment_index": index,
        "allocation_key": key,
    }
    try:
        with conn.begin_nested():
            store.insert_segment(conn, values)
    except IntegrityError:
        what = (
            f"physical network {physical_network}"
            if network_type == "flat"
            else f"segmentation id {segmentation_id}"
        )
        raise exceptions.SegmentationIdInUse(
            f"Unable to create the {network_type} network: {what} is in use by another network."
        ) from None
    return segment_id


def _free_vni(conn: Connection, network_type: str) -> int:
    prefix = segment_key(network_type, None, None)
    taken = {
        int(key[len(prefix) :])
        for key in store.taken_keys(conn, prefix)
        if key[len(prefix) :].isdigit()
    }
    vni = next((n for n in range(1, len(taken) + 2) if n not in taken), None)
    if vni is None or vni > MAX_VNI:
        raise exceptions.Conflict(f"No free {network_type} segmentation id is left.")
    return vni


def qos_policy_of(conn: Connection, context: RequestContext, body: Mapping[str, Any]) -> str | None:
    """The ``qos_policy_id`` a network or port body names: one the caller sees (its project's,
    or shared with it), else 404."""
    policy_id = validate.uuid_or_none(body, "qos_policy_id")
    if policy_id is None:
        return None
    qos.get_visible(conn, context, policy_id)
    return policy_id


def check_qos_detach(conn: Connection, context: RequestContext, current: str | None) -> None:
    """Replacing a resource's QoS policy takes one the caller sees: a member cannot take off a
    policy an admin put on that is not shared with its project (403, as upstream)."""
    if current is None:
        return
    try:
        qos.get_visible(conn, context, current)
    except exceptions.QosPolicyNotFound:
        raise exceptions.NotAuthorized(
            f"The policy does not allow removing QoS policy {current}: it is not shared with "
            "the caller's project."
        ) from None


def get_visible(conn: Connection, context: RequestContext, network_id: str) -> RowMapping:
    """A network the caller sees: its project's, or one shared with the caller's project (or
    with every project) through RBAC, or external for it; 404 otherwise."""
    found = store.get_network(conn, network_id)
    if found is None:
        raise exceptions.NetworkNotFound(network_id)
    # One statement reads both actions' grants; the view asks the same again (remembered).
    grants = rbac.grants(conn, rbac.NETWORK, [network_id], context)
    granted = any(network_id in grants.get(action, ()) for action in rbac.NETWORK_ACTIONS)
    if not policy.can_see(context, found["project_id"], granted):
        raise exceptions.NetworkNotFound(network_id)
    return found


def is_shared_with(conn: Connection, context: RequestContext, network_id: str) -> bool:
    """Whether the network is shared with the caller's project (or with every project)."""
    return bool(rbac.granted(conn, rbac.NETWORK, [network_id], context))


def update_network(
    conn: Connection,
    context: RequestContext,
    settings: NetworkSettings,
    network_id: str,
    body: Mapping[str, Any],
) -> None:
    if any(name in body for name in (*PROVIDER, "segments")):
        raise exceptions.InvalidInput("Plugin does not support updating provider attributes.")
    validate.known(body, _UPDATE, "network")
    validate.strings(body, STRINGS)
    found = get_visible(conn, context, network_id)
    policy.require_owner(context, found["project_id"], f"network {network_id}")
    policy.check_attributes(context, body, _OPERATOR_ONLY)
    values: dict[str, Any] = {}
    if "name" in body:
        values["name"] = validate.string(body, "name")
    if "description" in body:
        values["description"] = validate.string(body, "description")
    for flag in ("admin_state_up", "port_security_enabled"):
        if flag in body:
            values[flag] = validate.boolean(body, flag, True)
    if "shared" in body:
        if validate.boolean(body, "shared", False):
            rbac.share_with_all(conn, rbac.NETWORK, network_id, found["project_id"])
        else:
            rbac.unshare_with_all(conn, rbac.NETWORK, network_id)
    if "router:external" in body:
        if validate.boolean(body, "router:external", False):
            rbac.share_with_all(
                conn, rbac.NETWORK, network_id, found["project_id"], rbac.ACCESS_AS_EXTERNAL
            )
        else:
            rbac.unshare_with_all(conn, rbac.NETWORK, network_id, rbac.ACCESS_AS_EXTERNAL)
    if "mtu" in body:
        segments = store.segments_of(conn, [network_id]).get(network_id, [])
        natural = mtu_of(settings, [s["network_type"] for s in segments])
        values["mtu"] = validate.integer(body, "mtu", None, 68, natural, nullable=False)
    if "qos_policy_id" in body:
        values["qos_policy_id"] = qos_policy_of(conn, context, body)
        if values["qos_policy_id"] != found["qos_policy_id"]:
            check_qos_detach(conn, context, found["qos_policy_id"])
    if values or "shared" in body or "router:external" in body:
        store.update_network(conn, network_id, values)


def delete_network(conn: Connection, context: RequestContext, network_id: str) -> None:
    found = get_visible(conn, context, network_id)
    policy.require_owner(context, found["project_id"], f"network {network_id}")
    # An external network goes with its floating IPs that are associated with nothing, as
    # upstream; an associated one keeps its port, so the network is in use.
    for floating in router_store.floatingips_where(conn, floating_network_id=network_id):
        if floating["port_id"] is None:
            router_store.delete_floatingip(conn, floating["id"])
            port_store.delete(conn, floating["floating_port_id"])
    if store.count_ports(conn, network_id):
        raise exceptions.NetworkInUse(
            f"Unable to complete operation on network {network_id}. "
            "There are one or more ports still in use on the network."
        )
    store.delete_network(conn, network_id)
    rbac.forget(conn, rbac.NETWORK, network_id)


def views(
    conn: Connection, context: RequestContext, rows: Sequence[RowMapping]
) -> list[dict[str, Any]]:
    """The API's view of each network, with its segments and subnets read in bulk."""
    ids = [row["id"] for row in rows]
    grants = rbac.grants(conn, rbac.NETWORK, ids, context)
    shared = grants.get(rbac.ACCESS_AS_SHARED, frozenset())
    external = grants.get(rbac.ACCESS_AS_EXTERNAL, frozenset())
    segments = store.segments_of(conn, ids)
    summaries = store.subnet_summaries(conn, ids)
    none = store.SubnetSummary()
    return [
        policy.visible(
            context,
            _view(
                row,
                segments.get(row["id"], []),
                list(summaries.get(row["id"], none).ids),
                summaries.get(row["id"], none).routed,
                row["id"] in shared,
                row["id"] in external,
            ),
        )
        for row in rows
    ]


def _view(
    row: RowMapping,
    segments: Sequence[RowMapping],
    subnet_ids: list[str],
    routed: bool,
    shared: bool,
    external: bool,
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row["id"],
        "name": row["name"],
        "description": row["description"],
        "admin_state_up": row["admin_state_up"],
        "status": row["status"],
        "subnets": subnet_ids,
        "shared": shared,
        "project_id": row["project_id"],
        "tenant_id": row["project_id"],
        "mtu": row["mtu"],
        "router:external": external,
        "qos_policy_id": row["qos_policy_id"],
        "is_default": False,
        "port_security_enabled": row["port_security_enabled"],
        "availability_zone_hints": [],
        "availability_zones": [],
        "ipv4_address_scope": None,
        "ipv6_address_scope": None,
        "l2_adjacency": not routed,
        "tags": [],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }
    provider = [
        {
            "provider:network_type": s["network_type"],
            "provider:physical_network": s["physical_network"],
            "provider:segmentation_id": s["segmentation_id"],
        }
        for s in segments
    ]
    if len(provider) == 1:
        view.update(provider[0])
    elif provider:
        view["segments"] = provider
    return view

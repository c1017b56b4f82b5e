"""/v2.0/ports and the port-bindings extension (/v2.0/ports/{id}/bindings...)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from starlette.responses import Response

from berth.network import (
    bindings,
    bound_requests,
    exceptions,
    policy,
    ports,
    quotas,
    read_ahead,
    validate,
)
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import ports as store
from berth.network.store import security_groups as group_store
from berth.network.store.remembered import on_demand, remembering

PORT_FILTERS = {
    "id", "name", "description", "network_id", "project_id", "tenant_id", "mac_address",
    "admin_state_up", "status", "device_id", "device_owner", "qos_policy_id", "ip_allocation",
    "binding:host_id", "binding:vnic_type", "revision_number", "security_groups",
    "port_security_enabled",
}  # fmt: skip
# Filters answered in SQL, so a compute host listing its ports does not read every port.
_COLUMNS = {
    "network_id": "network_id", "device_id": "device_id", "device_owner": "device_owner",
    "mac_address": "mac_address", "status": "status", "binding:host_id": "binding_host",
}  # fmt: skip


# What a binding's update (the compute service's, for each port of a server) says.
_BINDING_ONLY = {"binding:host_id", "binding:profile"}


def _fixed_ips_match(item: dict[str, Any], wanted: list[str]) -> bool:
    """``fixed_ips=ip_address=10.0.0.5`` or ``fixed_ips=subnet_id=...``: any address matches."""
    for condition in wanted:
        key, _, value = condition.partition("=")
        if any(str(ip.get(key)) == value for ip in item["fixed_ips"]):
            return True
    return False


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


@remembering()
def list_ports(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items,
        PORT_FILTERS,
        req.service.settings.pagination_max_limit,
        special={"fixed_ips"},
    )
    equal = {_COLUMNS[name]: values for name, values in query.filters.items() if name in _COLUMNS}
    with req.service.db.read() as conn:
        in_scope = policy.in_scope(req.context)
        rows = store.list_visible(conn, req.visible_to, equal) if in_scope else []
        found = ports.views(conn, req.context, rows)
    chosen = listing.select(found, query, {"fixed_ips": _fixed_ips_match})
    return req.respond(listing.page(chosen, query, "ports", req.base_url, req.path))


@remembering()
def show_port(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = ports.get_visible(conn, req.context, req.param("port_id"))
        (view,) = ports.views(conn, req.context, [row])
    return req.respond({"port": listing.trim(view, _fields(req))})


@remembering()
def create_port(req: NetworkRequest) -> Response:
    """One port, or several (``{"ports": [...]}``) in one transaction: all or none."""
    bodies, bulk = req.resource_bodies("port", "ports")
    settings = req.service.settings
    adding = Counter(validate.project_of(body, req.project_id) for body in bodies)
    for project_id in sorted(adding):
        quotas.prepare(req.service.db, project_id)
    ahead = read_ahead.for_create(req.service.db, req.context, bodies)
    with req.service.db.write() as conn:
        read_ahead.check(conn, ahead)
        made = [_create_one_port(req, conn, body) for body in bodies]
        for project_id, count in sorted(adding.items()):
            quotas.enforce(conn, settings, project_id, quotas.PORT, count)
    with on_demand(req.service.db) as conn:
        views = _made_views(req, conn, made)
        routed = any(
            ports.layout_of(conn, n).routed for n in {view["network_id"] for view in views}
        )
    if routed:
        # Addresses on a routed network's segments are Placement inventory.
        req.service.changed()
    return req.respond({"ports": views} if bulk else {"port": views[0]}, 201)


def _create_one_port(
    req: NetworkRequest, conn: Any, body: dict[str, Any]
) -> tuple[str, ports.Written | None]:
    """A port, bound at once when the body names a host (or a profile for the host to come);
    and the port as its create wrote it, unless a binding changed it since (None)."""
    written = ports.create_port(conn, req.context, req.service.settings, body)
    port_id = str(written.row["id"])
    if body.get("binding:host_id") or body.get("binding:profile"):
        row = store.get(conn, port_id)
        assert row is not None
        bindings.apply_update(conn, req.service.settings, row, body)
        return port_id, None
    return port_id, written


def _made_views(
    req: NetworkRequest, conn: Any, made: list[tuple[str, ports.Written | None]]
) -> list[dict[str, Any]]:
    """The views of the ports a create made: each as its create wrote it, which its creator
    sees, reading only the groups the database did not say it joined; the ports read back
    when a binding changed one."""
    written = [w for _, w in made if w is not None]
    if len(written) < len(made):
        rows = [ports.get_visible(conn, req.context, port_id) for port_id, _ in made]
        return ports.views(conn, req.context, rows)
    addresses = {
        w.row["id"]: [{"subnet_id": f.subnet_id, "ip_address": f.ip_address} for f in w.fixed_ips]
        for w in written
    }
    groups = {w.row["id"]: list(w.groups) for w in written if w.groups is not None}
    unknown = [w.row["id"] for w in written if w.groups is None]
    if unknown:
        groups.update(group_store.groups_of_ports(conn, unknown))
    return ports.views_of(conn, req.context, [w.row for w in written], addresses, groups)


@remembering()
def update_port(req: NetworkRequest) -> Response:
    body = req.resource_body("port")
    port_id = req.param("port_id")
    following = [port_id] if "qos_policy_id" in body else []
    # A binding to a host (the compute service's, for each port of a server it builds).
    ahead = read_ahead.for_binding(req.service.db, port_id) if body.get("binding:host_id") else None
    with req.service.db.write() as conn:
        unchanged = read_ahead.check(conn, ahead)
        with bound_requests.following_bound_requests(conn, req.service.allocations, following):
            row = ports.update_port(conn, req.context, port_id, body)
        # Still the port as it stands: following a QoS change rewrites only bound ports, and
        # a bound port's QoS change cannot come with a binding change (409).
        held = ahead.fixed_ips_of(row) if ahead is not None and unchanged else None
        rebound = bindings.apply_update(conn, req.service.settings, row, body, held)
    # A body that changes more than the binding updates the port first (its revision grows, its
    # groups may change): its answer reads the port back.
    groups = ahead.groups_of(row) if ahead is not None and set(body) <= _BINDING_ONLY else None
    if rebound is not None and groups is not None:
        return _answer_rebound(req, rebound, groups)
    return _answer(req, port_id, 200)


@remembering()
def delete_port(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        row = ports.get_visible(conn, req.context, req.param("port_id"))
        routed = ports.layout_of(conn, row["network_id"]).routed
        ports.delete_port(conn, req.context, req.param("port_id"))
    if routed:
        req.service.changed()
    return req.no_content()


def _answer(req: NetworkRequest, port_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        row = ports.get_visible(conn, req.context, port_id)
        (view,) = ports.views(conn, req.context, [row])
        routed = ports.layout_of(conn, row["network_id"]).routed
    if routed:
        # Addresses on a routed network's segments are Placement inventory.
        req.service.changed()
    return req.respond({"port": view}, status)


def _answer_rebound(req: NetworkRequest, rebound: bindings.Rebound, groups: list[str]) -> Response:
    """A binding's answer from what its write knows: the port as bound, its addresses, and its
    groups as read ahead; the rest (its network's policy, segments and rules) is remembered."""
    row = rebound.row
    addresses = [{"subnet_id": f.subnet_id, "ip_address": f.ip_address} for f in rebound.fixed_ips]
    with on_demand(req.service.db) as conn:
        (view,) = ports.views_of(
            conn, req.context, [row], {row["id"]: addresses}, {row["id"]: groups}
        )
        routed = ports.layout_of(conn, row["network_id"]).routed
    if routed:
        req.service.changed()
    return req.respond({"port": view}, 200)


# -- bindings: the compute service's, for moves (admin and service only) --------------------------


def _port_for_binding(req: NetworkRequest, conn: Any, locked: bool = False) -> Any:
    policy.require_privileged(req.context, "managing port bindings")
    return ports.get_visible(conn, req.context, req.param("port_id"), locked)


@remembering()
def list_bindings(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = _port_for_binding(req, conn)
        found = bindings.binding_views(row, store.inactive_bindings(conn, row["id"]))
    return req.respond({"bindings": found})


@remembering()
def show_binding(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = _port_for_binding(req, conn)
        found = bindings.binding_views(row, store.inactive_bindings(conn, row["id"]))
    return req.respond({"binding": _one(found, row["id"], req.param("host"))})


@remembering()
def create_binding(req: NetworkRequest) -> Response:
    body = req.resource_body("binding")
    with req.service.db.write() as conn:
        row = _port_for_binding(req, conn, locked=True)
        bindings.create_binding(conn, req.service.settings, row, body)
    return _answer_binding(req, body.get("host"), 201)


@remembering()
def activate_binding(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        row = _port_for_binding(req, conn, locked=True)
        bindings.activate(conn, req.service.settings, row, req.param("host"))
    return _answer_binding(req, req.param("host"), 200)


@remembering()
def delete_binding(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        row = _port_for_binding(req, conn, locked=True)
        bindings.delete_binding(conn, row, req.param("host"))
        routed = ports.layout_of(conn, row["network_id"]).routed
    if routed:
        req.service.changed()
    return req.no_content()


def _answer_binding(req: NetworkRequest, host: Any, status: int) -> Response:
    with req.service.db.read() as conn:
        row = _port_for_binding(req, conn)
        found = bindings.binding_views(row, store.inactive_bindings(conn, row["id"]))
        routed = ports.layout_of(conn, row["network_id"]).routed
    if routed:
        # A binding on a routed network may take or give back an address of a segment.
        req.service.changed()
    return req.respond({"binding": _one(found, row["id"], str(host))}, status)


def _one(found: list[dict[str, Any]], port_id: str, host: str) -> dict[str, Any]:
    match = next((b for b in found if b["host"] == host), None)
    if match is None:
        raise exceptions.PortBindingNotFound(port_id, host)
    return match

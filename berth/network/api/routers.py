"""/v2.0/routers (the router, ext-gw-mode and extraroute extensions) and /v2.0/floatingips.

Every write that takes or gives back addresses wakes the Placement reporter: on a routed
network they are its segments' inventory."""

from __future__ import annotations

from starlette.responses import Response

from berth.network import exceptions, floatingips, policy, quotas, routers, validate
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import routers as store

ROUTER_FILTERS = {
    "id", "name", "description", "project_id", "tenant_id", "admin_state_up", "status",
    "revision_number",
}  # fmt: skip
FLOATINGIP_FILTERS = {
    "id", "description", "project_id", "tenant_id", "floating_network_id",
    "floating_ip_address", "port_id", "fixed_ip_address", "router_id", "status",
    "revision_number",
}  # fmt: skip


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


# -- routers --------------------------------------------------------------------------------------


def list_routers(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items, ROUTER_FILTERS, req.service.settings.pagination_max_limit
    )
    with req.service.db.read() as conn:
        rows = store.list_routers(conn, req.visible_to) if policy.in_scope(req.context) else []
        found = routers.views(conn, rows)
    chosen = listing.select(found, query)
    return req.respond(listing.page(chosen, query, "routers", req.base_url, req.path))


def show_router(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = routers.get_visible(conn, req.context, req.param("router_id"))
        (view,) = routers.views(conn, [row])
    return req.respond({"router": listing.trim(view, _fields(req))})


def create_router(req: NetworkRequest) -> Response:
    body = req.resource_body("router")
    project_id = validate.project_of(body, req.project_id)
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        router_id = routers.create_router(conn, req.context, req.service.settings, body)
        quotas.enforce(conn, req.service.settings, project_id, quotas.ROUTER)
    req.service.changed()
    return _answer_router(req, router_id, 201)


def update_router(req: NetworkRequest) -> Response:
    body = req.resource_body("router")
    with req.service.db.write() as conn:
        routers.update_router(conn, req.context, req.service.settings, req.param("router_id"), body)
    req.service.changed()
    return _answer_router(req, req.param("router_id"), 200)


def delete_router(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        routers.delete_router(conn, req.context, req.param("router_id"))
    req.service.changed()
    return req.no_content()


def add_router_interface(req: NetworkRequest) -> Response:
    body = _interface_body(req)
    routers.interface_request(body)
    router_id = req.param("router_id")
    with req.service.db.read() as conn:
        project_id = routers.get_visible(conn, req.context, router_id)["project_id"]
    # A new interface port is the router's project's, and counts against its port quota.
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        info = routers.add_interface(conn, req.context, req.service.settings, router_id, body)
        quotas.enforce(conn, req.service.settings, project_id, quotas.PORT)
    req.service.changed()
    return req.respond(info)


def remove_router_interface(req: NetworkRequest) -> Response:
    body = _interface_body(req)
    with req.service.db.write() as conn:
        info = routers.remove_interface(conn, req.context, req.param("router_id"), body)
    req.service.changed()
    return req.respond(info)


def _interface_body(req: NetworkRequest) -> dict[str, object]:
    """The interface request is the body itself: ``{"subnet_id": ...}`` or ``{"port_id": ...}``."""
    body = req.json_body()
    if not isinstance(body, dict):
        raise exceptions.BadRequest("Resource body required: a JSON object.")
    return dict(body)


def _answer_router(req: NetworkRequest, router_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        row = routers.get_visible(conn, req.context, router_id)
        (view,) = routers.views(conn, [row])
    return req.respond({"router": view}, status)


# -- floating IPs ---------------------------------------------------------------------------------


def list_floatingips(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items, FLOATINGIP_FILTERS, req.service.settings.pagination_max_limit
    )
    with req.service.db.read() as conn:
        in_scope = policy.in_scope(req.context)
        rows = store.list_floatingips(conn, req.visible_to) if in_scope else []
        found = floatingips.views(conn, rows)
    chosen = listing.select(found, query)
    return req.respond(listing.page(chosen, query, "floatingips", req.base_url, req.path))


def show_floatingip(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = floatingips.get_visible(conn, req.context, req.param("floatingip_id"))
        (view,) = floatingips.views(conn, [row])
    return req.respond({"floatingip": listing.trim(view, _fields(req))})


def create_floatingip(req: NetworkRequest) -> Response:
    body = req.resource_body("floatingip")
    project_id = validate.project_of(body, req.project_id)
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        fip_id = floatingips.create_floatingip(conn, req.context, req.service.settings, body)
        quotas.enforce(conn, req.service.settings, project_id, quotas.FLOATINGIP)
    req.service.changed()
    return _answer_floatingip(req, fip_id, 201)


def update_floatingip(req: NetworkRequest) -> Response:
    body = req.resource_body("floatingip")
    with req.service.db.write() as conn:
        floatingips.update_floatingip(conn, req.context, req.param("floatingip_id"), body)
    return _answer_floatingip(req, req.param("floatingip_id"), 200)


def delete_floatingip(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        floatingips.delete_floatingip(conn, req.context, req.param("floatingip_id"))
    req.service.changed()
    return req.no_content()


def _answer_floatingip(req: NetworkRequest, fip_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        row = floatingips.get_visible(conn, req.context, fip_id)
        (view,) = floatingips.views(conn, [row])
    return req.respond({"floatingip": view}, status)

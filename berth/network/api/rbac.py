"""/v2.0/rbac-policies: grants of QoS policies to other projects."""

from __future__ import annotations

from starlette.responses import Response

from berth.network import policy, quotas, rbac, validate
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import rbac as store

RBAC_FILTERS = {
    "id", "project_id", "tenant_id", "object_type", "object_id", "action", "target_tenant",
}  # fmt: skip


def list_entries(req: NetworkRequest) -> Response:
    query = listing.parse(req.query_items, RBAC_FILTERS, req.service.settings.pagination_max_limit)
    with req.service.db.read() as conn:
        rows = store.list_entries(conn, req.visible_to) if policy.in_scope(req.context) else []
    found = [rbac.view(row) for row in rows]
    return req.respond(
        listing.page(listing.select(found, query), query, "rbac_policies", req.base_url, req.path)
    )


def show_entry(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = rbac.get_visible(conn, req.context, req.param("rbac_policy_id"))
    return req.respond({"rbac_policy": listing.trim(rbac.view(row), _fields(req))})


def create_entry(req: NetworkRequest) -> Response:
    body = req.resource_body("rbac_policy")
    project_id = validate.project_of(body, req.project_id)
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        entry_id = rbac.create_entry(conn, req.context, body)
        quotas.enforce(conn, req.service.settings, project_id, quotas.RBAC_POLICY)
    return _answer(req, entry_id, 201)


def update_entry(req: NetworkRequest) -> Response:
    body = req.resource_body("rbac_policy")
    with req.service.db.write() as conn:
        rbac.update_entry(conn, req.context, req.param("rbac_policy_id"), body)
    return _answer(req, req.param("rbac_policy_id"), 200)


def delete_entry(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        rbac.delete_entry(conn, req.context, req.param("rbac_policy_id"))
    return req.no_content()


def _answer(req: NetworkRequest, entry_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        row = rbac.get_visible(conn, req.context, entry_id)
    return req.respond({"rbac_policy": rbac.view(row)}, status)


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]

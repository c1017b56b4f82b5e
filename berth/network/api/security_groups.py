"""/v2.0/security-groups and /v2.0/security-group-rules (the security-group extension).

Listing groups first makes the ``default`` group of the project listed (the caller's, or the
one ``project_id`` an admin filters on) if it has none, as upstream does.
The domain is :mod:`berth.network.security_groups`.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.network import policy, quotas, validate
from berth.network import security_groups as domain
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import security_groups as store

GROUP_FILTERS = {
    "id", "name", "description", "project_id", "tenant_id", "stateful", "revision_number",
}  # fmt: skip
RULE_FILTERS = {
    "id", "security_group_id", "project_id", "tenant_id", "description", "direction",
    "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix",
    "remote_group_id", "revision_number",
}  # fmt: skip


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


def list_groups(req: NetworkRequest) -> Response:
    query = listing.parse(req.query_items, GROUP_FILTERS, req.service.settings.pagination_max_limit)
    if policy.in_scope(req.context):
        domain.ensure_default(req.service.db, _listed_project(req, query))
    # The id and project filters narrow the query itself: the compute service asks for a few
    # groups of a cloud that may have thousands.
    ids = query.filters.get("id")
    projects = query.filters.get("project_id", query.filters.get("tenant_id"))
    with req.service.db.read() as conn:
        rows = (
            store.list_groups(conn, req.visible_to, ids, projects)
            if policy.in_scope(req.context)
            else []
        )
        found = domain.views(conn, rows)
    selected = listing.select(found, query)
    return req.respond(listing.page(selected, query, "security_groups", req.base_url, req.path))


def _listed_project(req: NetworkRequest, query: listing.ListQuery) -> str:
    """Whose default group a listing makes: the one project it filters on, as upstream (an
    admin's, or the compute service's proxy, listing for a project), else the caller's."""
    asked = query.filters.get("project_id", query.filters.get("tenant_id", []))
    if len(asked) == 1 and (policy.is_privileged(req.context) or asked[0] == req.project_id):
        return asked[0]
    return req.project_id


def show_group(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = domain.get_visible(conn, req.context, req.param("security_group_id"))
        (view,) = domain.views(conn, [row])
    return req.respond({"security_group": listing.trim(view, _fields(req))})


def create_group(req: NetworkRequest) -> Response:
    body = req.resource_body("security_group")
    project_id = validate.project_of(body, req.project_id)
    quotas.prepare(req.service.db, project_id)
    settings = req.service.settings
    with req.service.db.write() as conn:
        group_id = domain.create_group(conn, req.context, body)
        quotas.enforce(conn, settings, project_id, quotas.SECURITY_GROUP)
        quotas.enforce(conn, settings, project_id, quotas.SECURITY_GROUP_RULE, 2)
    return _answer_group(req, group_id, 201)


def update_group(req: NetworkRequest) -> Response:
    body = req.resource_body("security_group")
    group_id = req.param("security_group_id")
    with req.service.db.write() as conn:
        domain.update_group(conn, req.context, group_id, body)
    return _answer_group(req, group_id, 200)


def delete_group(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        domain.delete_group(conn, req.context, req.param("security_group_id"))
    return req.no_content()


def _answer_group(req: NetworkRequest, group_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        (view,) = domain.views(conn, [domain.get_visible(conn, req.context, group_id)])
    return req.respond({"security_group": view}, status)


def list_rules(req: NetworkRequest) -> Response:
    query = listing.parse(req.query_items, RULE_FILTERS, req.service.settings.pagination_max_limit)
    with req.service.db.read() as conn:
        rows = store.list_rules(conn, req.visible_to) if policy.in_scope(req.context) else []
    found = [domain.rule_view(row) for row in rows]
    return req.respond(
        listing.page(
            listing.select(found, query), query, "security_group_rules", req.base_url, req.path
        )
    )


def show_rule(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = domain.get_rule(conn, req.context, req.param("security_group_rule_id"))
    return req.respond({"security_group_rule": listing.trim(domain.rule_view(row), _fields(req))})


def create_rule(req: NetworkRequest) -> Response:
    body = req.resource_body("security_group_rule")
    settings = req.service.settings
    with req.service.db.read() as conn:
        group = store.get(conn, str(body.get("security_group_id")))
    # The rule's project is its group's unless the body names one (the quota counted).
    project_id = validate.project_of(body, group["project_id"] if group else req.project_id)
    quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        rule_id = domain.create_rule(conn, req.context, body)
        quotas.enforce(conn, settings, project_id, quotas.SECURITY_GROUP_RULE)
    with req.service.db.read() as conn:
        row = domain.get_rule(conn, req.context, rule_id)
    return req.respond({"security_group_rule": domain.rule_view(row)}, 201)


def delete_rule(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        domain.delete_rule(conn, req.context, req.param("security_group_rule_id"))
    return req.no_content()

"""/v2.0/qos/policies, their rules of each type, and /v2.0/qos/rule-types."""

from __future__ import annotations

from contextlib import AbstractContextManager

from sqlalchemy.engine import Connection
from starlette.responses import Response

from berth.network import bound_requests, policy, qos
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import qos as store

POLICY_FILTERS = {
    "id", "name", "description", "shared", "is_default", "project_id", "tenant_id",
    "revision_number",
}  # fmt: skip


def list_rule_types(req: NetworkRequest) -> Response:
    """``{"rule_types": [{"type": "bandwidth_limit"}, ...]}``"""
    return req.respond({"rule_types": [{"type": name} for name in qos.RULE_TYPES]})


def show_rule_type(req: NetworkRequest) -> Response:
    return req.respond({"rule_type": qos.rule_type_details(req.context, req.param("rule_type"))})


def list_policies(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items, POLICY_FILTERS, req.service.settings.pagination_max_limit
    )
    with req.service.db.read() as conn:
        rows = store.list_policies(conn, req.visible_to) if policy.in_scope(req.context) else []
        found = qos.views(conn, req.context, rows)
        # Upstream finds a policy listing's marker among all policies, seen or not.
        marker = store.get_policy(conn, query.marker) if query.marker else None
        unlisted = qos.views(conn, req.context, [marker])[0] if marker is not None else None
    selected = listing.select(found, query)
    return req.respond(
        listing.page(selected, query, "policies", req.base_url, req.path, unlisted_marker=unlisted)
    )


def show_policy(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = qos.get_visible(conn, req.context, req.param("policy_id"))
        view = qos.views(conn, req.context, [row])[0]
    return req.respond({"policy": listing.trim(view, _fields(req))})


def create_policy(req: NetworkRequest) -> Response:
    body = req.resource_body("policy")
    with req.service.db.write() as conn:
        policy_id = qos.create_policy(conn, req.context, body)
    return _answer_policy(req, policy_id, 201)


def update_policy(req: NetworkRequest) -> Response:
    body = req.resource_body("policy")
    with req.service.db.write() as conn:
        qos.update_policy(conn, req.context, req.param("policy_id"), body)
    return _answer_policy(req, req.param("policy_id"), 200)


def delete_policy(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        qos.delete_policy(conn, req.context, req.param("policy_id"))
    return req.no_content()


def _answer_policy(req: NetworkRequest, policy_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        view = qos.views(conn, req.context, [qos.get_visible(conn, req.context, policy_id)])[0]
    return req.respond({"policy": view}, status)


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


class RuleHandlers:
    """The five handlers of one rule type, under ``/v2.0/qos/policies/{policy_id}/<type>_rules``."""

    def __init__(self, kind: qos.RuleType) -> None:
        self.kind = kind
        self.filters = {"id", "direction", *kind.rates}

    def list(self, req: NetworkRequest) -> Response:
        query = listing.parse(
            req.query_items, self.filters, req.service.settings.pagination_max_limit
        )
        with req.service.db.read() as conn:
            rows = qos.list_rules(conn, req.context, req.param("policy_id"), self.kind)
        found = [qos.rule_view(row) for row in rows]
        return req.respond(
            listing.page(
                listing.select(found, query), query, self.kind.collection, req.base_url, req.path
            )
        )

    def show(self, req: NetworkRequest) -> Response:
        with req.service.db.read() as conn:
            row = qos.get_rule(
                conn, req.context, req.param("policy_id"), self.kind, req.param("rule_id")
            )
        return req.respond({self.kind.member: listing.trim(qos.rule_view(row), _fields(req))})

    def create(self, req: NetworkRequest) -> Response:
        body = req.resource_body(self.kind.member)
        policy_id = req.param("policy_id")
        with req.service.db.write() as conn, _following_requests(req, conn, policy_id):
            rule_id = qos.create_rule(conn, req.context, policy_id, self.kind, body)
        return self._answer(req, rule_id, 201)

    def update(self, req: NetworkRequest) -> Response:
        body = req.resource_body(self.kind.member)
        policy_id, rule_id = req.param("policy_id"), req.param("rule_id")
        with req.service.db.write() as conn, _following_requests(req, conn, policy_id):
            qos.update_rule(conn, req.context, policy_id, self.kind, rule_id, body)
        return self._answer(req, rule_id, 200)

    def delete(self, req: NetworkRequest) -> Response:
        policy_id = req.param("policy_id")
        with req.service.db.write() as conn, _following_requests(req, conn, policy_id):
            qos.delete_rule(conn, req.context, policy_id, self.kind, req.param("rule_id"))
        return req.no_content()

    def _answer(self, req: NetworkRequest, rule_id: str, status: int) -> Response:
        with req.service.db.read() as conn:
            row = qos.get_rule(conn, req.context, req.param("policy_id"), self.kind, rule_id)
        return req.respond({self.kind.member: qos.rule_view(row)}, status)


def _following_requests(
    req: NetworkRequest, conn: Connection, policy_id: str
) -> AbstractContextManager[None]:
    """A rule change carries to the allocations of the bound ports using the policy, or is
    refused."""
    return bound_requests.following_bound_requests(
        conn, req.service.allocations, store.ports_using_policy(conn, policy_id)
    )


BANDWIDTH_LIMIT = RuleHandlers(qos.BANDWIDTH_LIMIT)
MINIMUM_BANDWIDTH = RuleHandlers(qos.MINIMUM_BANDWIDTH)
MINIMUM_PACKET_RATE = RuleHandlers(qos.MINIMUM_PACKET_RATE)

"""/v2.0/agents: the operator's view of the agents, and (a Berth extension) their state reports.

Neutron's agents report their state over RPC; Berth's simulated agents may run in other processes,
so ``POST /v2.0/agents`` takes a report over HTTP (in-process agents call ``agents.report``):

    POST /v2.0/agents {"agent": {"agent_type": "Open vSwitch agent", "host": "compute1",
                                 "binary": "neutron-openvswitch-agent", "topic": "N/A",
                                 "configurations": {...}, "availability_zone": "nova"}}

answers 201 with the agent the first time, then 200 with it refreshed.
"""

from __future__ import annotations

from sqlalchemy.engine import RowMapping
from starlette.responses import Response

from berth.common.timeutils import utcnow
from berth.network import agents, exceptions, policy, validate
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import agents as store

AGENT_FILTERS = {
    "id", "agent_type", "binary", "topic", "host", "admin_state_up", "alive",
    "availability_zone", "description", "resources_synced",
}  # fmt: skip
_REPORT = {"agent_type", "host", "binary", "topic", "configurations", "availability_zone"}


def list_agents(req: NetworkRequest) -> Response:
    """Agents are the admins': upstream filters a listing by that rule, so others get none."""
    query = listing.parse(req.query_items, AGENT_FILTERS, req.service.settings.pagination_max_limit)
    now, down_time = utcnow(), req.service.settings.agent_down_time
    found = []
    if policy.is_privileged(req.context):
        with req.service.db.read() as conn:
            found = [agents.view(row, now, down_time) for row in store.list_agents(conn)]
    return req.respond(
        listing.page(listing.select(found, query), query, "agents", req.base_url, req.path)
    )


def show_agent(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "showing agents")
    with req.service.db.read() as conn:
        row = agents.get_agent(conn, req.param("agent_id"))
    fields = [value for name, value in req.query_items if name == "fields"]
    return req.respond({"agent": listing.trim(_view(req, row), fields)})


def report_state(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "reporting agent state")
    body = req.resource_body("agent")
    validate.known(body, _REPORT, "agent")
    if "configurations" not in body:
        raise exceptions.BadRequest(
            "Failed to parse request. Required attribute 'configurations' not specified"
        )
    with req.service.db.write() as conn:
        agent_id, created = agents.report(
            conn,
            agent_type=validate.one_of(body, "agent_type", agents.AGENT_TYPES),
            host=validate.string(body, "host"),
            binary=validate.string(body, "binary"),
            topic=validate.string(body, "topic"),
            configurations=body["configurations"],
            availability_zone=validate.string(body, "availability_zone", None),
        )
    req.service.changed()
    return _answer(req, agent_id, 201 if created else 200)


def update_agent(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "updating agents")
    body = req.resource_body("agent")
    with req.service.db.write() as conn:
        agents.update_agent(conn, req.param("agent_id"), body)
    return _answer(req, req.param("agent_id"), 200)


def delete_agent(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "deleting agents")
    with req.service.db.write() as conn:
        agents.delete_agent(conn, req.param("agent_id"))
    req.service.changed()
    return req.no_content()


def _answer(req: NetworkRequest, agent_id: str, status: int) -> Response:
    with req.service.db.read() as conn:
        row = agents.get_agent(conn, agent_id)
    return req.respond({"agent": _view(req, row)}, status)


def _view(req: NetworkRequest, row: RowMapping) -> dict[str, object]:
    return agents.view(row, utcnow(), req.service.settings.agent_down_time)

"""/v2.0/subnets and /v2.0/network-ip-availabilities."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from starlette.responses import Response

from berth.network import networks, policy, quotas, rbac, subnets, validate
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import networks as network_store
from berth.network.store import subnets as store

SUBNET_FILTERS = {
    "id", "name", "description", "network_id", "segment_id", "project_id", "tenant_id",
    "ip_version", "cidr", "gateway_ip", "enable_dhcp", "ipv6_ra_mode", "ipv6_address_mode",
    "revision_number", "subnetpool_id",
}  # fmt: skip
AVAILABILITY_FILTERS = {"network_id", "network_name", "project_id", "tenant_id", "ip_version"}


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


def list_subnets(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items,
        SUBNET_FILTERS,
        req.service.settings.pagination_max_limit,
        special={"shared"},
    )
    with req.service.db.read() as conn:
        rows = store.list_visible(conn, req.visible_to) if policy.in_scope(req.context) else []
        found = [subnets.view(row) for row in rows]
        networks_shared = rbac.granted(
            conn, rbac.NETWORK, {row["network_id"] for row in rows}, req.context
        )

    def shared(item: dict[str, Any], wanted: list[str]) -> bool:
        """``shared``: a subnet has no such attribute; its network's sharing is meant."""
        return listing.matches(item["network_id"] in networks_shared, wanted)

    chosen = listing.select(found, query, {"shared": shared})
    return req.respond(listing.page(chosen, query, "subnets", req.base_url, req.path))


def show_subnet(req: NetworkRequest) -> Response:
    with req.service.db.read() as conn:
        row = subnets.get_visible(conn, req.context, req.param("subnet_id"))
    return req.respond({"subnet": listing.trim(subnets.view(row), _fields(req))})


def create_subnet(req: NetworkRequest) -> Response:
    """One subnet, or several (``{"subnets": [...]}``) in one transaction: all or none."""
    bodies, bulk = req.resource_bodies("subnet", "subnets")
    adding = Counter(validate.project_of(body, req.project_id) for body in bodies)
    for project_id in sorted(adding):
        quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        made = [subnets.create_subnet(conn, req.context, body) for body in bodies]
        for project_id, count in sorted(adding.items()):
            quotas.enforce(conn, req.service.settings, project_id, quotas.SUBNET, count)
    req.service.changed()
    with req.service.db.read() as conn:
        views = [subnets.view(subnets.get_visible(conn, req.context, s)) for s in made]
    return req.respond({"subnets": views} if bulk else {"subnet": views[0]}, 201)


def update_subnet(req: NetworkRequest) -> Response:
    body = req.resource_body("subnet")
    with req.service.db.write() as conn:
        subnets.update_subnet(conn, req.context, req.param("subnet_id"), body)
    return _answer(req, req.param("subnet_id"), 200)


def delete_subnet(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        subnets.delete_subnet(conn, req.context, req.param("subnet_id"))
    req.service.changed()
    return req.no_content()


def _answer(req: NetworkRequest, subnet_id: str, status: int) -> Response:
    req.service.changed()
    with req.service.db.read() as conn:
        row = subnets.get_visible(conn, req.context, subnet_id)
    return req.respond({"subnet": subnets.view(row)}, status)


def list_availabilities(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "reading network IP availability")
    wanted_versions = {v for name, v in req.query_items if name == "ip_version"}
    items = [(n, v) for n, v in req.query_items if n != "ip_version"]
    query = listing.parse(items, AVAILABILITY_FILTERS, req.service.settings.pagination_max_limit)
    with req.service.db.read() as conn:
        found = _availabilities(conn, network_store.list_networks(conn, None), wanted_versions)
    body = listing.page(
        listing.select(found, query),
        query,
        "network_ip_availabilities",
        req.base_url,
        req.path,
        key="network_id",
    )
    return req.respond(body)


def show_availability(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "reading network IP availability")
    with req.service.db.read() as conn:
        network = networks.get_visible(conn, req.context, req.param("network_id"))
        (found,) = _availabilities(conn, [network], set())
    return req.respond({"network_ip_availability": found})


def _availabilities(
    conn: Connection, rows: Sequence[RowMapping], versions: set[str]
) -> list[dict[str, Any]]:
    """Each network's availability, over its subnets of the wanted IP versions (all if none)."""
    by_network: dict[str, list[RowMapping]] = {}
    for row in store.of_networks(conn, [r["id"] for r in rows]):
        if not versions or str(row["ip_version"]) in versions:
            by_network.setdefault(row["network_id"], []).append(row)
    used = store.used_counts(conn, [s["id"] for found in by_network.values() for s in found])
    return [
        subnets.availability(row, by_network.get(row["id"], []), used)
        for row in rows
        if not versions or row["id"] in by_network
    ]

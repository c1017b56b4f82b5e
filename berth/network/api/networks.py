"""/v2.0/networks and /v2.0/segments."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from starlette.responses import Response

from berth.network import (
    bound_requests,
    exceptions,
    networks,
    policy,
    ports,
    quotas,
    recall,
    validate,
)
from berth.network.api import listing
from berth.network.api.request import NetworkRequest
from berth.network.store import networks as store
from berth.network.store.remembered import remembering

NETWORK_FILTERS = {
    "id", "name", "description", "admin_state_up", "status", "shared", "project_id", "tenant_id",
    "mtu", "router:external", "qos_policy_id", "provider:network_type",
    "provider:physical_network", "provider:segmentation_id", "revision_number", "is_default",
    "port_security_enabled",
}  # fmt: skip
SEGMENT_FILTERS = {
    "id", "network_id", "name", "description", "network_type", "physical_network",
    "segmentation_id", "revision_number",
}  # fmt: skip
_SEGMENT_CREATE = {"network_id", "network_type", "physical_network", "segmentation_id", "name", "description",
                   "project_id", "tenant_id"}  # fmt: skip


@remembering()
def list_networks(req: NetworkRequest) -> Response:
    query = listing.parse(
        req.query_items, NETWORK_FILTERS, req.service.settings.pagination_max_limit
    )
    with req.service.db.read() as conn:
        rows = store.list_networks(conn, req.visible_to) if policy.in_scope(req.context) else []
        found = networks.views(conn, req.context, rows)
    return req.respond(
        listing.page(listing.select(found, query), query, "networks", req.base_url, req.path)
    )


@remembering()
def show_network(req: NetworkRequest) -> Response:
    network_id = req.param("network_id")
    # What the caller's project's last show of the network read, while the network is as it
    # was (a boot shows its network twice, and every boot the same one). Then the revisions
    # are the one statement, and it needs no transaction: what is not recalled is read in the
    # one the next statement begins, after the revisions, never older than them (as in a
    # server's read transaction; see ``recall``).
    key = ("show", req.context.project_id, network_id)
    db = req.service.db
    with db.one_statement() as conn, recall.recalling(db, conn, key, [network_id]):
        row = networks.get_visible(conn, req.context, network_id)
        view = networks.views(conn, req.context, [row])[0]
    return req.respond({"network": listing.trim(view, _fields(req))})


def create_network(req: NetworkRequest) -> Response:
    """One network, or several (``{"networks": [...]}``) in one transaction: all or none."""
    bodies, bulk = req.resource_bodies("network", "networks")
    adding = Counter(validate.project_of(body, req.project_id) for body in bodies)
    for project_id in sorted(adding):
        quotas.prepare(req.service.db, project_id)
    with req.service.db.write() as conn:
        made = [
            networks.create_network(conn, req.context, req.service.settings, body)
            for body in bodies
        ]
        for project_id, count in sorted(adding.items()):
            quotas.enforce(conn, req.service.settings, project_id, quotas.NETWORK, count)
    req.service.changed()
    with req.service.db.read() as conn:
        found = [networks.get_visible(conn, req.context, network_id) for network_id in made]
        views = networks.views(conn, req.context, found)
    return req.respond({"networks": views} if bulk else {"network": views[0]}, 201)


def update_network(req: NetworkRequest) -> Response:
    body = req.resource_body("network")
    network_id = req.param("network_id")
    with req.service.db.write() as conn:
        following = (
            ports.following_network_policy(conn, network_id) if "qos_policy_id" in body else []
        )
        with bound_requests.following_bound_requests(conn, req.service.allocations, following):
            networks.update_network(conn, req.context, req.service.settings, network_id, body)
    return _answer_network(req, network_id, 200)


def delete_network(req: NetworkRequest) -> Response:
    with req.service.db.write() as conn:
        networks.delete_network(conn, req.context, req.param("network_id"))
    req.service.changed()
    return req.no_content()


def _answer_network(req: NetworkRequest, network_id: str, status: int) -> Response:
    req.service.changed()
    with req.service.db.read() as conn:
        row = networks.get_visible(conn, req.context, network_id)
        view = networks.views(conn, req.context, [row])[0]
    return req.respond({"network": view}, status)


def _fields(req: NetworkRequest) -> list[str]:
    return [value for name, value in req.query_items if name == "fields"]


# -- segments: the operator's view of a network's pieces ---------------------------------------


def _segment_view(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "network_id": row["network_id"],
        "name": row["name"] or None,
        "description": row["description"],
        "network_type": row["network_type"],
        "physical_network": row["physical_network"],
        "segmentation_id": row["segmentation_id"],
        "created_at": row["created_at"],
        "updated_at": row["updated_at"] or row["created_at"],
        "revision_number": row["revision_number"],
    }


def list_segments(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "listing segments")
    query = listing.parse(
        req.query_items, SEGMENT_FILTERS, req.service.settings.pagination_max_limit
    )
    with req.service.db.read() as conn:
        found = [_segment_view(s) for rows in store.segments_of(conn, None).values() for s in rows]
    return req.respond(
        listing.page(listing.select(found, query), query, "segments", req.base_url, req.path)
    )


def show_segment(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "showing segments")
    with req.service.db.read() as conn:
        row = _segment(conn, req.param("segment_id"))
    return req.respond({"segment": listing.trim(_segment_view(row), _fields(req))})


def create_segment(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "creating segments")
    body = req.resource_body("segment")
    validate.known(body, _SEGMENT_CREATE, "segment")
    network_id = validate.uuid_value("network_id", body.get("network_id"))
    kind, physnet, segid = networks.check_segment(
        body.get("network_type"), body.get("physical_network"), body.get("segmentation_id")
    )
    with req.service.db.write() as conn:
        networks.get_visible(conn, req.context, network_id)
        segment_id = networks.add_segment(
            conn, network_id, kind, physnet, segid,
            validate.string(body, "name", "") or "", validate.string(body, "description", ""),
        )  # fmt: skip
        row = _segment(conn, segment_id)
    req.service.changed()
    return req.respond({"segment": _segment_view(row)}, 201)


def update_segment(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "updating segments")
    body = req.resource_body("segment")
    validate.known(body, {"name", "description"}, "segment")
    values = {name: validate.string(body, name) or "" for name in body}
    with req.service.db.write() as conn:
        _segment(conn, req.param("segment_id"))
        if values:
            store.update_segment(conn, req.param("segment_id"), values)
        row = _segment(conn, req.param("segment_id"))
    return req.respond({"segment": _segment_view(row)})


def delete_segment(req: NetworkRequest) -> Response:
    policy.require_privileged(req.context, "deleting segments")
    segment_id = req.param("segment_id")
    with req.service.db.write() as conn:
        row = _segment(conn, segment_id)
        if store.subnets_on_segment(conn, segment_id):
            raise exceptions.SegmentInUse(
                f"Segment '{segment_id}' cannot be deleted: one or more subnets are on it."
            )
        if len(store.segments_of(conn, [row["network_id"]]).get(row["network_id"], [])) == 1:
            raise exceptions.SegmentInUse(
                f"Segment '{segment_id}' is the only segment of network {row['network_id']}."
            )
        store.delete_segment(conn, segment_id)
    req.service.changed()
    return req.no_content()


def _segment(conn: Any, segment_id: str) -> Any:
    try:
        uuid.UUID(segment_id)
    except ValueError:
        raise exceptions.SegmentNotFound(segment_id) from None
    row = store.get_segment(conn, segment_id)
    if row is None:
        raise exceptions.SegmentNotFound(segment_id)
    return row

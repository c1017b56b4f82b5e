"""GET /os-migrations (every move, for admins) and GET /servers/{id}/migrations[/{id}] (a
server's live migrations under way), in upstream's shapes per microversion."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import RowMapping
from starlette.responses import Response

from berth.compute import exceptions, moves, server_tasks
from berth.compute.api import microversion, paging
from berth.compute.api.request import ComputeRequest
from berth.compute.db import migrations

_FILTERS = ("host", "status", "source_compute")


def index(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-migrations:index")
    query = dict(req.query_items)
    filters: dict[str, Any] = {name: query[name] for name in _FILTERS if name in query}
    if req.at_least(microversion.MIGRATION_TYPES) and "migration_type" in query:
        filters["migration_type"] = query["migration_type"]
    paged = req.at_least(microversion.MIGRATIONS_PAGED)
    if paged:
        filters["changed_since"] = paging.changes_since(req)
    found = moves.list_migrations(req.service, query.get("instance_uuid"), **filters)
    body: dict[str, Any] = {}
    if paged:
        page = paging.parse(req)
        found = paging.after_marker(found, page, lambda item: str(item[0]["uuid"]))
        last = str(found[-1][0]["uuid"]) if found else None
        body.update(paging.links(req, "migrations", found, page, last))
    return req.respond({"migrations": [_view(req, row, ids) for row, ids in found], **body})


def server_index(req: ComputeRequest) -> Response:
    rule = "os_compute_api:servers:migrations:index"
    req.authorize(rule)
    found = _live_migrations(req, rule)
    return req.respond({"migrations": [_server_view(req, row) for row in found]})


def server_show(req: ComputeRequest) -> Response:
    rule = "os_compute_api:servers:migrations:show"
    req.authorize(rule)
    wanted = req.param("migration_id")
    found = next((row for row in _live_migrations(req, rule) if str(row["id"]) == wanted), None)
    if found is None:
        raise exceptions.NotFound(
            f"In-progress live migration {wanted} is not found for server {req.param('server_id')}."
        )
    return req.respond({"migration": _server_view(req, found)})


def _live_migrations(req: ComputeRequest, rule: str) -> list[RowMapping]:
    """The server's live migrations under way (its other moves are not listed here)."""
    if not req.at_least(microversion.MIGRATION_TYPES):
        raise exceptions.NotFound("The resource could not be found.")
    server_id = req.param("server_id")
    server_tasks.find(
        req.service, req.context, server_id,
        lambda project_id: req.allowed(rule, {"project_id": project_id}), "migrations",
    )  # fmt: skip
    found = moves.list_migrations(
        req.service, server_id, migration_type=migrations.LIVE_MIGRATION,
        statuses=migrations.IN_PROGRESS,
    )  # fmt: skip
    return [row for row, _ in found]


def _view(
    req: ComputeRequest, row: RowMapping, flavor_ids: Mapping[str, int | None]
) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row["id"],
        "instance_uuid": row["instance_uuid"],
        "status": row["status"],
        "source_compute": row["source_compute"],
        "source_node": row["source_node"],
        "dest_compute": row["dest_compute"],
        "dest_node": row["dest_node"],
        "dest_host": row["dest_host"],
        "old_instance_type_id": flavor_ids["old"],
        "new_instance_type_id": flavor_ids["new"],
        "created_at": _time(row["created_at"]),
        "updated_at": _time(row["updated_at"]),
    }
    if req.at_least(microversion.MIGRATION_TYPES):
        view["migration_type"] = row["migration_type"]
        live = (
            row["migration_type"] == migrations.LIVE_MIGRATION
            and row["status"] in migrations.IN_PROGRESS
        )
        if live:
            href = f"{req.base_url}/v2.1/servers/{row['instance_uuid']}/migrations/{row['id']}"
            view["links"] = [{"rel": "self", "href": href}, {"rel": "bookmark", "href": href}]
    if req.at_least(microversion.MIGRATIONS_PAGED):
        view["uuid"] = row["uuid"]
    return view


def _server_view(req: ComputeRequest, row: RowMapping) -> dict[str, Any]:
    view: dict[str, Any] = {
        "id": row["id"],
        "server_uuid": row["instance_uuid"],
        "status": row["status"],
        "source_compute": row["source_compute"],
        "source_node": row["source_node"],
        "dest_compute": row["dest_compute"],
        "dest_node": row["dest_node"],
        "dest_host": row["dest_host"],
        "created_at": _time(row["created_at"]),
        "updated_at": _time(row["updated_at"]),
        # A simulated host copies no memory or disk: nothing to report while it runs.
        "memory_total_bytes": None,
        "memory_processed_bytes": None,
        "memory_remaining_bytes": None,
        "disk_total_bytes": None,
        "disk_processed_bytes": None,
        "disk_remaining_bytes": None,
    }
    if req.at_least(microversion.MIGRATIONS_PAGED):
        view["uuid"] = row["uuid"]
    return view


def _time(when: dt.datetime | None) -> str | None:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%f") if when is not None else None

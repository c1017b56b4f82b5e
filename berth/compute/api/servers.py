"""/servers: create, list (summaries and details), show, update and delete.

Creating answers 202 with the first server made (``min_count``/``max_count`` above 1 make more,
each named ``NAME-N``), or with ``return_reservation_id`` only the reservation id the servers
share: the super-conductor builds them after the answer. The domain is :mod:`berth.compute.servers`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from urllib.parse import urlencode

from starlette.responses import Response

from berth.compute import (
    action_input,
    exceptions,
    security_groups,
    server_input,
    server_update,
    server_views,
    servers,
)
from berth.compute.api import microversion, paging
from berth.compute.api.request import ComputeRequest

# From 2.38 an unknown status in a list's filter is a 400 (before, it matches nothing).
_UNKNOWN_STATUS_REFUSED = (2, 38)


def create_server(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:servers:create")
    if not req.context.project_id:
        raise exceptions.Forbidden("A server belongs to a project; this token has none.")
    request = server_input.parse_create(
        req.json_body(),
        networks_required=req.at_least(microversion.NETWORKS_AUTO_NONE),
    )
    made = servers.create_servers(req.service, req.context, request)
    if request.return_reservation_id:
        return req.respond({"reservation_id": made.id}, 202)
    view = server_views.created(
        made.server_uuids[0],
        request.admin_pass,
        req.base_url,
        request.auto_disk_config,
        request.security_groups,
    )
    return req.respond({"server": view}, 202, headers={"location": view["links"][0]["href"]})


def list_servers(req: ComputeRequest) -> Response:
    return _list(req, detail=False)


def list_servers_detail(req: ComputeRequest) -> Response:
    return _list(req, detail=True)


def show_server(req: ComputeRequest) -> Response:
    rule = "os_compute_api:servers:show"
    req.authorize(rule)
    server = servers.get_server(
        req.service, req.context, req.param("server_id"), _may_see(req, rule)
    )
    (server,) = _with_security_groups(req, [server])
    return req.respond({"server": server_views.detail(server, viewer(req))})


def update_server(req: ComputeRequest) -> Response:
    """Rename the server, set its description (2.19) or access addresses; answers the server
    as it is now, without the extended attributes (upstream's update view)."""
    rule = "os_compute_api:servers:update"
    req.authorize(rule)
    changes = action_input.update(
        req.json_body(), with_description=req.at_least(microversion.SERVER_DESCRIPTION)
    )
    server = server_update.update_server(
        req.service, req.context, req.param("server_id"), _may_see(req, rule), changes
    )
    return req.respond({"server": server_views.changed(server, viewer(req))})


def delete_server(req: ComputeRequest) -> Response:
    rule = "os_compute_api:servers:delete"
    req.authorize(rule)
    servers.delete_server(req.service, req.context, req.param("server_id"), _may_see(req, rule))
    return req.no_content()


def _list(req: ComputeRequest, detail: bool) -> Response:
    rule = "os_compute_api:servers:detail" if detail else "os_compute_api:servers:index"
    req.authorize(rule)
    query = server_input.parse_list_query(
        req.query_items,
        project_id=req.project_id,
        # all_tenants (and the host filter, as upstream's admin-only filters) need this rule.
        is_admin=req.allowed(f"{rule}:get_all_tenants"),
        statuses=server_views.STATUSES,
        unknown_status_is_error=req.at_least(_UNKNOWN_STATUS_REFUSED),
        tag_filters=req.at_least(microversion.SERVER_TAGS),
        changes_since=paging.changes_since(req),
    )
    found = servers.list_servers(req.service, query, detail)
    if detail:
        found = _with_security_groups(req, found)
    shown_to = viewer(req)
    show = server_views.detail if detail else server_views.summary
    body: dict[str, object] = {"servers": [show(server, shown_to) for server in found]}
    if found and len(found) == query.limit:
        following = urlencode([*query.echo, ("marker", found[-1].uuid)])
        body["servers_links"] = [{"rel": "next", "href": f"{req.base_url}{req.path}?{following}"}]
    return req.respond(body)


def _with_security_groups(
    req: ComputeRequest, found: list[server_views.Server]
) -> list[server_views.Server]:
    """The servers with the names of their ports' security groups, read from the network."""
    groups = security_groups.of_servers(req.service, [server.uuid for server in found])
    return [
        dataclasses.replace(server, security_groups=tuple(groups.get(server.uuid, ())))
        for server in found
    ]


def _may_see(req: ComputeRequest, rule: str) -> Callable[[str], bool]:
    """Whether ``rule`` allows the caller on a server of this project: if not, the server is a
    404, hiding that it exists (the caller passed the rule for their own project already)."""
    return lambda project_id: req.allowed(rule, {"project_id": project_id})


def viewer(req: ComputeRequest) -> server_views.Viewer:
    """How this request is shown servers (its caller, its microversion)."""
    return server_views.Viewer(
        base_url=req.base_url,
        # Host attributes (OS-EXT-SRV-ATTR:*) and fault details, as upstream's rule decides.
        is_admin=req.allowed("os_compute_api:os-extended-server-attributes"),
        flavor_values=req.at_least(microversion.FLAVOR_IN_SERVER),
        shows_locked=req.at_least(microversion.LOCKED_IN_SERVER),
        shows_description=req.at_least(microversion.SERVER_DESCRIPTION),
        shows_trusted_certs=req.at_least(microversion.TRUSTED_CERTS_IN_SERVER),
        shows_tags=req.at_least(microversion.SERVER_TAGS),
        shows_reservation=req.at_least(microversion.MORE_SERVER_ATTRIBUTES),
    )

"""/servers/{server_id}/tags (microversion 2.26): a server's tags, all or one.

    GET    .../tags          {"tags": [...]}
    PUT    .../tags          replace them: {"tags": [...]} -> {"tags": [...]}
    DELETE .../tags          204, no tags left
    GET    .../tags/{tag}    204 when the server has it, else 404
    PUT    .../tags/{tag}    201 (with a Location) when added, 204 when it was there
    DELETE .../tags/{tag}    204; 404 when the server has no such tag

Before 2.26 there are no tags: every one of these is a 404. The rules are
:mod:`berth.compute.server_tags`, the states a change needs :mod:`berth.compute.server_records`.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.responses import Response

from berth.compute import exceptions, server_records, server_tags
from berth.compute.api import microversion, server_refs
from berth.compute.api.request import ComputeRequest
from berth.compute.server_records import ServerRef

_RULE = "os_compute_api:os-server-tags:"


def index(req: ComputeRequest) -> Response:
    server = _authorized(req, "index")
    return req.respond({"tags": server_records.tags(server)})


def replace(req: ComputeRequest) -> Response:
    server = _authorized(req, "update_all")
    body = req.json_body()
    if not isinstance(body, dict) or set(body) != {"tags"}:
        raise exceptions.BadRequest('Invalid input: the body is {"tags": [...]}.')
    new = server_tags.parse_tags(body["tags"])
    return req.respond({"tags": server_records.replace_tags(server, new)})


def delete_all(req: ComputeRequest) -> Response:
    server = _authorized(req, "delete_all")
    server_records.replace_tags(server, [])
    return req.no_content()


def show(req: ComputeRequest) -> Response:
    server = _authorized(req, "show")
    tag = req.param("tag")
    if not server_records.has_tag(server, tag):
        raise server_records.no_tag(server.uuid, tag)
    return req.no_content()


def update(req: ComputeRequest) -> Response:
    server = _authorized(req, "update")
    tag = server_tags.parse_tag(req.param("tag"))
    if not server_records.add_tag(server, tag):
        return req.no_content()
    location = f"{req.base_url}/v2.1/servers/{server.uuid}/tags/{quote(tag, safe='')}"
    return Response(status_code=201, headers={"location": location})


def delete(req: ComputeRequest) -> Response:
    server = _authorized(req, "delete")
    server_records.delete_tag(server, req.param("tag"))
    return req.no_content()


def _authorized(req: ComputeRequest, action: str) -> ServerRef:
    if not req.at_least(microversion.SERVER_TAGS):
        raise exceptions.NotFound("The resource could not be found.")
    return server_refs.authorized(req, _RULE + action)

"""/servers/{server_id}/metadata: a server's metadata, whole or by key.

    GET    .../metadata          {"metadata": {...}}
    PUT    .../metadata          replace it: {"metadata": {...}} -> the new metadata
    POST   .../metadata          merge into it: {"metadata": {...}} -> the whole metadata
    GET    .../metadata/{key}    {"meta": {key: value}}; 404 without the key
    PUT    .../metadata/{key}    {"meta": {key: value}} (the URL's key only) -> the same
    DELETE .../metadata/{key}    204; 404 without the key

The rules are :mod:`berth.compute.server_metadata`, the states a change needs
:mod:`berth.compute.server_records`; over the ``metadata_items`` quota is a 403.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.compute import server_metadata, server_records
from berth.compute.api import server_refs
from berth.compute.api.request import ComputeRequest

_RULE = "os_compute_api:server-metadata:"


def index(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "index")
    return req.respond({"metadata": server_records.metadata(server)})


def replace(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "update_all")
    new = server_metadata.parse_body(req.json_body())
    return req.respond({"metadata": server_records.replace_metadata(server, new)})


def merge(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "create")
    items = server_metadata.parse_body(req.json_body())
    return req.respond({"metadata": server_records.merge_metadata(server, items)})


def show(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "show")
    key = req.param("key")
    return req.respond({"meta": {key: server_records.metadata_item(server, key)}})


def update(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "update")
    key = req.param("key")
    value = server_metadata.parse_item(req.json_body(), key)
    server_records.merge_metadata(server, {key: value})
    return req.respond({"meta": {key: value}})


def delete(req: ComputeRequest) -> Response:
    server = server_refs.authorized(req, _RULE + "delete")
    server_records.delete_metadata_item(server, req.param("key"))
    return req.no_content()

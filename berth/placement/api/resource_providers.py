"""Resource providers: /resource_providers and /resource_providers/{uuid}."""

from __future__ import annotations

import contextlib
import uuid as uuidlib
from typing import Any

import orjson
from starlette.responses import Response

from berth.common import collector
from berth.placement import candidates
from berth.placement.api.request import PlacementRequest, validate
from berth.placement.api.schemas import resource_provider as schema
from berth.placement.candidates.index import ProviderIndex, Rows
from berth.placement.candidates.render import kept_per_row
from berth.placement.microversion import Version
from berth.placement.store import providers
from berth.placement.store.providers import ResourceProvider


def provider_url(uuid: str) -> str:
    return f"/resource_providers/{uuid}"


def _link_rels(version: Version) -> tuple[str, ...]:
    """The links a provider shows besides ``self``, by microversion."""
    rels = ["inventories", "usages"]
    if version.matches((1, 1)):
        rels.append("aggregates")
    if version.matches((1, 6)):
        rels.append("traits")
    if version.matches((1, 11)):
        rels.append("allocations")
    return tuple(rels)


def serialize_provider(provider: ResourceProvider, version: Version) -> dict[str, Any]:
    """
    {"uuid": "...", "name": "...", "generation": 0,
     "links": [{"rel": "self", "href": "/resource_providers/{uuid}"},
               {"rel": "inventories", "href": "/resource_providers/{uuid}/inventories"}, ...],
     "parent_provider_uuid": null, "root_provider_uuid": "..."}   (the last two from 1.14)
    """
    url = provider_url(provider.uuid)
    data: dict[str, Any] = {
        "uuid": provider.uuid,
        "name": provider.name,
        "generation": provider.generation,
        "links": [{"rel": "self", "href": url}]
        + [{"rel": r, "href": f"{url}/{r}"} for r in _link_rels(version)],
    }
    if version.matches((1, 14)):
        data["parent_provider_uuid"] = provider.parent_provider_uuid
        data["root_provider_uuid"] = provider.root_provider_uuid
    return data


def serialize_listing(index: ProviderIndex, rows: Rows, version: Version) -> bytes:
    """``{"resource_providers": [serialize_provider(p) for p in rows]}`` as JSON, each item
    written from one template per request and kept per row (``render.kept_per_row``): a list of
    tens of thousands of providers would otherwise be a quarter of a million small dicts. Uuids
    are canonical (checked when a provider is made), so only names need escaping."""
    rels = tuple(_link_rels(version))
    tree = version.matches((1, 14))
    # The links, cut where the provider's uuid goes: joined by it, they are its links.
    link_pieces = ",".join(
        ['{"rel":"self","href":"/resource_providers/\0"}']
        + [f'{{"rel":"{r}","href":"/resource_providers/\0/{r}"}}' for r in rels]
    ).split("\0")

    def make(missing: Rows) -> list[str]:
        items = []
        for uuid, name, generation, parent, root in zip(*index.headers(missing), strict=True):
            item = (
                f'{{"uuid":"{uuid}","name":{_json_string(name)},"generation":{generation},'
                f'"links":[{uuid.join(link_pieces)}]'
            )
            if tree:
                parent_json = f'"{parent}"' if parent else "null"
                item += f',"parent_provider_uuid":{parent_json},"root_provider_uuid":"{root}"'
            items.append(item + "}")
        return items

    items = kept_per_row(index, rows, ("listing", rels, tree), make)
    return ('{"resource_providers":[' + ",".join(items) + "]}").encode()


def _json_string(text: str) -> str:
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return orjson.dumps(text).decode()


def _canonical_uuid(data: Any) -> None:
    """Write a given provider uuid in its dashed lower-case form, as upstream stores it.

    Upstream accepts a uuid without dashes (or in braces) and stores it canonically, so a
    duplicate in another spelling is a conflict rather than a second provider.
    """
    if isinstance(data, dict) and isinstance(data.get("uuid"), str):
        # Anything uuid.UUID cannot read is left for the schema to refuse.
        with contextlib.suppress(ValueError):
            data["uuid"] = str(uuidlib.UUID(data["uuid"]))


def create_resource_provider(req: PlacementRequest) -> Response:
    """POST /resource_providers

    {"name": "compute-1", "uuid": "...", "parent_provider_uuid": "..."}   (uuid optional)

    Before 1.20: 201, Location, no body. From 1.20: 200 with the provider, and Location.
    """
    req.authorize("placement:resource_providers:create")
    body_schema = schema.POST_V1_14 if req.version.matches((1, 14)) else schema.POST_V1_0
    data = req.json_body()
    _canonical_uuid(data)
    validate(data, body_schema)
    with req.write() as conn:
        provider = providers.create(
            conn,
            data.get("uuid") or str(uuidlib.uuid4()),
            data["name"],
            data.get("parent_provider_uuid"),
        )
    location = {"location": provider_url(provider.uuid)}
    if not req.version.matches((1, 20)):
        return req.respond(None, 201, headers=location)
    return req.respond(
        serialize_provider(provider, req.version),
        last_modified=provider.last_modified,
        headers=location,
    )


def show_resource_provider(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid} -> the provider (see ``serialize_provider``)."""
    req.authorize("placement:resource_providers:show")
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
    return req.respond(
        serialize_provider(provider, req.version), last_modified=provider.last_modified
    )


def update_resource_provider(req: PlacementRequest) -> Response:
    """PUT /resource_providers/{uuid}

    {"name": "new name", "parent_provider_uuid": "..."}   (parent from 1.14; null from 1.37)

    -> 200 with the provider. Its generation does not change.
    """
    req.authorize("placement:resource_providers:update")
    body_schema = schema.PUT_V1_14 if req.version.matches((1, 14)) else schema.PUT_V1_0
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        data = req.json_body(body_schema)
        provider = providers.update(
            conn,
            provider,
            data["name"],
            data.get("parent_provider_uuid", provider.parent_provider_uuid),
            allow_reparenting=req.version.matches((1, 37)),
        )
    return req.respond(
        serialize_provider(provider, req.version), last_modified=provider.last_modified
    )


def delete_resource_provider(req: PlacementRequest) -> Response:
    """DELETE /resource_providers/{uuid} -> 204; 409 while it has children or allocations."""
    req.authorize("placement:resource_providers:delete")
    with req.write() as conn:
        providers.delete(conn, req.path_params["uuid"])
    return req.no_content()


def list_resource_providers(req: PlacementRequest) -> Response:
    """GET /resource_providers?name=&uuid=&member_of=&resources=&in_tree=&required=

    {"resource_providers": [<provider>, ...]}
    """
    req.authorize("placement:resource_providers:list")
    filters = candidates.parse_provider_filters(req.query_items, req.version)
    with req.service.index.current() as index, collector.paused():
        rows = candidates.matching_providers(index, filters)
        last_modified = index.last_modified(rows)
        body = serialize_listing(index, rows, req.version)
    return req.respond(body, last_modified=last_modified)

"""Traits (/traits) and a provider's traits (/resource_providers/{uuid}/traits), from 1.6."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import jsonschema
from starlette.responses import Response

from berth.common.timeutils import http_date
from berth.placement.api.request import HTTPError, PlacementRequest
from berth.placement.api.schemas import trait as schema
from berth.placement.store import providers, traits
from berth.placement.store.traits import Trait

_SINCE = (1, 6)
_CUSTOM_NAME = jsonschema.Draft7Validator(schema.CUSTOM_TRAIT)


def _trait_url(name: str) -> str:
    return f"/traits/{name}"


def _serialize_traits(found: Sequence[Trait]) -> tuple[dict[str, Any], dt.datetime | None]:
    """{"traits": ["HW_CPU_X86_AVX2", "CUSTOM_GOLD"]} and the newest change among them."""
    last_modified = max((t.last_modified for t in found), default=None)
    return {"traits": [t.name for t in found]}, last_modified


def _cache_headers(req: PlacementRequest, last_modified: dt.datetime) -> dict[str, str]:
    """Cache headers for the bodiless answers that upstream gives them from 1.15."""
    if not req.version.matches((1, 15)):
        return {}
    return {"cache-control": "no-cache", "last-modified": http_date(last_modified)}


def _name_filter(value: str) -> dict[str, Any]:
    """``in:A,B`` -> exact names; ``startswith:CUSTOM_`` -> a prefix; another op filters nothing."""
    op, sep, names = value.partition(":")
    if not sep:
        raise HTTPError(
            400,
            "Badly formatted name parameter. Expected name query string parameter in form: "
            f'?name=[in|startswith]:[name1,name2|prefix]. Got: "{value}"',
        )
    if op == "in":
        return {"names": names.split(",")}
    if op == "startswith":
        return {"prefix": names}
    return {}


def list_traits(req: PlacementRequest) -> Response:
    """GET /traits?name=in:A,B|startswith:P&associated=true|false -> {"traits": [...]}"""
    req.require_version(_SINCE)
    req.authorize("placement:traits:list")
    params = req.query(schema.LIST_TRAITS)
    filters = _name_filter(params["name"]) if "name" in params else {}
    if "associated" in params:
        associated = params["associated"].lower()
        if associated not in ("true", "false"):
            raise HTTPError(400, 'The query parameter "associated" only accepts "true" or "false"')
        filters["associated"] = associated == "true"
    with req.read() as conn:
        found = traits.list_traits(conn, **filters)
    body, last_modified = _serialize_traits(found)
    return req.respond(body, last_modified=last_modified)


def show_trait(req: PlacementRequest) -> Response:
    """GET /traits/{name} -> 204 when the trait exists."""
    req.require_version(_SINCE)
    req.authorize("placement:traits:show")
    with req.read() as conn:
        trait = traits.get(conn, req.path_params["name"])
    return req.respond(None, 204, headers=_cache_headers(req, trait.last_modified))


def put_trait(req: PlacementRequest) -> Response:
    """PUT /traits/{name} -> 201 when created, 204 when it already existed; custom names only."""
    req.require_version(_SINCE)
    req.authorize("placement:traits:update")
    name = req.path_params["name"]
    if not _CUSTOM_NAME.is_valid(name):
        raise HTTPError(
            400,
            "The trait is invalid. A valid trait must be no longer than 255 characters, start "
            'with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"',
        )
    with req.write() as conn:
        trait, created = traits.ensure(conn, name)
    headers = {"location": _trait_url(name)} | _cache_headers(req, trait.last_modified)
    return req.respond(None, 201 if created else 204, headers=headers)


def delete_trait(req: PlacementRequest) -> Response:
    """DELETE /traits/{name} -> 204; standard traits and traits in use stay."""
    req.require_version(_SINCE)
    req.authorize("placement:traits:delete")
    with req.write() as conn:
        traits.delete(conn, req.path_params["name"])
    return req.no_content()


def _provider_traits_body(found: Sequence[Trait], generation: int) -> tuple[dict[str, Any], Any]:
    """{"traits": [...], "resource_provider_generation": 1} and the newest trait change."""
    body, last_modified = _serialize_traits(found)
    body["resource_provider_generation"] = generation
    return body, last_modified


def list_provider_traits(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/traits"""
    req.require_version(_SINCE)
    req.authorize("placement:resource_providers:traits:list")
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        found = traits.of_provider(conn, provider.id)
    body, last_modified = _provider_traits_body(found, provider.generation)
    return req.respond(body, last_modified=last_modified)


def update_provider_traits(req: PlacementRequest) -> Response:
    """PUT /resource_providers/{uuid}/traits

    {"traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0} -> the new set and
    generation, which moves only when the set changes.
    """
    req.require_version(_SINCE)
    req.authorize("placement:resource_providers:traits:update")
    data = req.json_body(schema.PUT_PROVIDER_TRAITS)
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        providers.require_generation(provider, data["resource_provider_generation"])
        found, generation = traits.replace_on_provider(conn, provider, data["traits"])
    body, last_modified = _provider_traits_body(found, generation)
    return req.respond(body, last_modified=last_modified)


def delete_provider_traits(req: PlacementRequest) -> Response:
    """DELETE /resource_providers/{uuid}/traits -> 204; no generation is asked for."""
    req.require_version(_SINCE)
    req.authorize("placement:resource_providers:traits:delete")
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        traits.replace_on_provider(conn, provider, [])
    return req.no_content()

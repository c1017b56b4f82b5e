"""Allocations: a consumer's (/allocations/{consumer_uuid}), several consumers' at once
(POST /allocations, from 1.13), and those made against one provider
(/resource_providers/{uuid}/allocations)."""

from __future__ import annotations

import datetime as dt
import uuid as uuidlib
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from starlette.responses import Response

from berth.placement import exceptions
from berth.placement.api.request import HTTPError, PlacementRequest
from berth.placement.api.schemas import allocation as schema
from berth.placement.microversion import Version
from berth.placement.store import allocations, consumers, providers
from berth.placement.store.allocations import Allocation, Claim
from berth.placement.store.consumers import Consumer

_POST_SINCE = (1, 13)


def pick_schema(
    by_version: Sequence[tuple[tuple[int, int], dict[str, Any]]], version: Version
) -> dict[str, Any]:
    """The newest schema whose microversion the request matches."""
    return next(found for since, found in by_version if version.matches(since))


def _last_modified(found: Sequence[Allocation]) -> dt.datetime | None:
    return max((a.last_modified for a in found), default=None)


def _serialize_for_consumer(
    consumer: Consumer | None, found: Sequence[Allocation], version: Version
) -> dict[str, Any]:
    """
    {"allocations": {RP_UUID: {"generation": 3, "resources": {"VCPU": 2, "DISK_GB": 10}}},
     "project_id": "...", "user_id": "...",   (from 1.12, when there are allocations)
     "consumer_generation": 1,                 (from 1.28)
     "consumer_type": "INSTANCE"}              (from 1.38; "unknown" when never given)
    """
    by_provider: dict[str, dict[str, Any]] = {}
    for a in found:
        entry = by_provider.setdefault(
            a.resource_provider_uuid,
            {"generation": a.resource_provider_generation, "resources": {}},
        )
        entry["resources"][a.resource_class] = a.used
    body: dict[str, Any] = {"allocations": by_provider}
    if found and consumer is not None and version.matches((1, 12)):
        body["project_id"] = consumer.project_id
        body["user_id"] = consumer.user_id
        if version.matches((1, 28)):
            body["consumer_generation"] = consumer.generation
        if version.matches((1, 38)):
            body["consumer_type"] = consumer.consumer_type or consumers.UNKNOWN_TYPE
    return body


def _serialize_for_provider(
    found: Sequence[Allocation], generation: int, version: Version
) -> dict[str, Any]:
    """
    {"resource_provider_generation": 5,
     "allocations": {CONSUMER_UUID: {"resources": {"VCPU": 2},
                                     "consumer_generation": 1}}}   (the generation from 1.28)
    """
    by_consumer: dict[str, dict[str, Any]] = defaultdict(lambda: {"resources": {}})
    for a in found:
        entry = by_consumer[a.consumer_uuid]
        entry["resources"][a.resource_class] = a.used
        if version.matches((1, 28)):
            entry["consumer_generation"] = a.consumer_generation
    return {"allocations": dict(by_consumer), "resource_provider_generation": generation}


def claim_of(consumer_uuid: str, data: Mapping[str, Any], version: Version) -> Claim:
    """One consumer's validated request body as a claim.

    Before 1.12 allocations come as a list; a provider named twice keeps its last entry, as
    upstream does. Before 1.8 there is no project or user, and the placeholder ones are used.
    """
    raw = data["allocations"]
    if isinstance(raw, list):
        wanted = {item["resource_provider"]["uuid"]: item["resources"] for item in raw}
    else:
        wanted = {rp_uuid: entry["resources"] for rp_uuid, entry in raw.items()}
    project_id, user_id = data.get("project_id"), data.get("user_id")
    if project_id is None:
        project_id = user_id = consumers.INCOMPLETE_ID
    return Claim(
        consumer_uuid=consumer_uuid,
        allocations=wanted,
        project_id=project_id,
        user_id=user_id,
        consumer_type=data.get("consumer_type"),
        generation=data.get("consumer_generation"),
        check_generation=version.matches((1, 28)),
    )


def _canonical_consumer_uuid(value: str) -> str:
    """The dashed lower-case form of a consumer uuid given in any form ``uuid.UUID`` reads."""
    try:
        return str(uuidlib.UUID(value))
    except ValueError:
        raise HTTPError(400, f"Malformed consumer_uuid: {value}") from None


@contextmanager
def worded(unknown_class: str) -> Iterator[None]:
    """Refusals of an allocation write, in the words upstream's clients and tests look for.

    ``unknown_class`` prefixes the refusal of a resource class that does not exist.
    """
    try:
        yield
    except consumers.GenerationConflict:
        raise
    except allocations.UnknownResourceClass as exc:
        raise exceptions.InvalidInput(f"{unknown_class}{exc}") from None
    except allocations.AllocationRefused as exc:
        raise exceptions.Conflict(f"Unable to allocate inventory: {exc}") from None
    except exceptions.ConcurrentUpdate as exc:
        raise exceptions.ConcurrentUpdate(
            f"Inventory and/or allocations changed while attempting to allocate: {exc}"
        ) from None


def list_for_consumer(req: PlacementRequest) -> Response:
    """GET /allocations/{consumer_uuid}: an unknown consumer simply has none."""
    req.authorize("placement:allocations:list")
    with req.read() as conn:
        consumer, found = allocations.for_consumer(conn, req.path_params["consumer_uuid"])
    body = _serialize_for_consumer(consumer, found, req.version)
    return req.respond(body, last_modified=_last_modified(found))


def set_for_consumer(req: PlacementRequest) -> Response:
    """PUT /allocations/{consumer_uuid} -> 204

    1.0: {"allocations": [{"resource_provider": {"uuid": RP}, "resources": {"VCPU": 1}}]}
    1.8: ... plus "project_id" and "user_id"
    1.12: {"allocations": {RP: {"resources": {"VCPU": 1}}}, "project_id": ..., "user_id": ...}
    1.28: ... plus "consumer_generation" (null for a new consumer); {} allocations release all
    1.34: ... optionally "mappings"; 1.38: ... plus "consumer_type"
    """
    req.authorize("placement:allocations:update")
    consumer_uuid = _canonical_consumer_uuid(req.path_params["consumer_uuid"])
    data = req.json_body(pick_schema(schema.PUT_BY_VERSION, req.version))
    claim = claim_of(consumer_uuid, data, req.version)
    with worded(f"Unable to allocate inventory for consumer {consumer_uuid}: "):
        req.service.claims.write([claim])
    return req.no_content()


def set_allocations(req: PlacementRequest) -> Response:
    """POST /allocations -> 204: several consumers' allocations, all written or none.

    {CONSUMER_UUID: {"allocations": {RP: {"resources": {...}}} or {} to release them,
                     "project_id": ..., "user_id": ...,
                     "consumer_generation": 1,   (from 1.28)
                     "consumer_type": "INSTANCE"},  (from 1.38)
     ...}
    """
    req.require_version(_POST_SINCE)
    req.authorize("placement:allocations:manage")
    data = req.json_body(pick_schema(schema.POST_BY_VERSION, req.version))
    claims = [claim_of(consumer_uuid, entry, req.version) for consumer_uuid, entry in data.items()]
    with worded("Unable to allocate inventory "):
        req.service.claims.write(claims)
    return req.no_content()


def delete_for_consumer(req: PlacementRequest) -> Response:
    """DELETE /allocations/{consumer_uuid} -> 204; 404 when the consumer has none."""
    req.authorize("placement:allocations:delete")
    consumer_uuid = req.path_params["consumer_uuid"]
    req.service.db.write_with_retry(lambda conn: allocations.release(conn, consumer_uuid))
    return req.no_content()


def list_for_provider(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/allocations"""
    req.authorize("placement:resource_providers:allocations:list")
    uuid = req.path_params["uuid"]
    with req.read() as conn:
        provider = providers.find(conn, uuid)
        if provider is None:
            raise exceptions.NotFound(
                f"Resource provider '{uuid}' not found: No resource provider with uuid {uuid} found"
            )
        found = allocations.for_provider(conn, provider)
    body = _serialize_for_provider(found, provider.generation, req.version)
    return req.respond(body, last_modified=_last_modified(found))

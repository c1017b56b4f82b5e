"""POST /reshaper (1.30): move inventory and the allocations against it between providers in one
atomic step, such as from a compute node to the child providers it grows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from starlette.responses import Response

from berth.placement import exceptions
from berth.placement.api.allocations import claim_of, pick_schema
from berth.placement.api.request import PlacementRequest
from berth.placement.api.schemas import reshaper as schema
from berth.placement.capacity import Inventory
from berth.placement.store import allocations, consumers, reshaper
from berth.placement.store.reshaper import NewInventory

_SINCE = (1, 30)


def _new_inventory(data: Mapping[str, Any]) -> NewInventory:
    """{"resource_provider_generation": 5, "inventories": {"VCPU": {"total": 8, ...}}}"""
    return NewInventory(
        generation=data["resource_provider_generation"],
        stock={
            rc: Inventory(**_without_generation(record))
            for rc, record in data["inventories"].items()
        },
    )


def _without_generation(record: Mapping[str, Any]) -> dict[str, Any]:
    # A record may repeat the provider generation; only the provider-level one counts.
    return {k: v for k, v in record.items() if k != "resource_provider_generation"}


@contextmanager
def _worded() -> Iterator[None]:
    """Refusals of a reshape, in the words upstream's clients and tests look for."""
    try:
        yield
    except (consumers.GenerationConflict, reshaper.ProviderGenerationConflict):
        raise
    except allocations.UnknownResourceClass as exc:
        raise exceptions.InvalidInput(f"malformed reshaper data: {exc}") from None
    except exceptions.InventoryInUse as exc:
        raise exceptions.InventoryInUse(f"update conflict: {exc}") from None
    except allocations.AllocationRefused as exc:
        raise exceptions.Conflict(f"Unable to allocate inventory: {exc}") from None
    except exceptions.ConcurrentUpdate as exc:
        raise exceptions.ConcurrentUpdate(f"update conflict: {exc}") from None


def reshape(req: PlacementRequest) -> Response:
    """POST /reshaper -> 204

    {"inventories": {RP_UUID: {"resource_provider_generation": 5,
                               "inventories": {"DISK_GB": {"total": 2048}}}},
     "allocations": {CONSUMER_UUID: {"allocations": {RP_UUID: {"resources": {...}}},
                                     "project_id": ..., "user_id": ...,
                                     "consumer_generation": 1,
                                     "consumer_type": "INSTANCE"}}}   (the type from 1.38)
    """
    req.require_version(_SINCE)
    req.authorize("placement:reshaper:reshape")
    data = req.json_body(pick_schema(schema.BY_VERSION, req.version))
    inventories = {uuid: _new_inventory(entry) for uuid, entry in data["inventories"].items()}
    claims = [claim_of(uuid, entry, req.version) for uuid, entry in data["allocations"].items()]
    with _worded():
        allocations.write_retrying(
            req.service.db,
            req.service.settings.allocation_conflict_retry_count,
            lambda conn: reshaper.reshape(conn, inventories, claims),
        )
    return req.no_content()

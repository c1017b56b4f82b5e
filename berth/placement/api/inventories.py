"""Inventories: /resource_providers/{uuid}/inventories and .../inventories/{resource_class}."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from starlette.responses import Response

from berth.placement import capacity, exceptions
from berth.placement.api.request import HTTPError, PlacementRequest
from berth.placement.api.schemas import inventory as schema
from berth.placement.capacity import Inventory
from berth.placement.store import inventories, providers
from berth.placement.store.inventories import StoredInventory
from berth.placement.store.providers import ResourceProvider


def _serialize(inventory: Inventory) -> dict[str, Any]:
    """{"total": 8, "reserved": 0, "min_unit": 1, "max_unit": 8, "step_size": 1,
    "allocation_ratio": 16.0}"""
    return dict(inventory.fields())


def _inventories_body(generation: int, stored: Mapping[str, Inventory]) -> dict[str, Any]:
    """{"resource_provider_generation": 3, "inventories": {"VCPU": {...}, "DISK_GB": {...}}}"""
    return {
        "resource_provider_generation": generation,
        "inventories": {rc: _serialize(inv) for rc, inv in stored.items()},
    }


def _one_body(generation: int, inventory: Inventory) -> dict[str, Any]:
    """{"resource_provider_generation": 3, "total": 8, ...}"""
    return {"resource_provider_generation": generation, **_serialize(inventory)}


def _newest(stored: Iterable[StoredInventory]) -> dt.datetime | None:
    return max((s.last_modified for s in stored), default=None)


def _inventory(
    req: PlacementRequest, provider: ResourceProvider, rc: str, data: Any, action: str = "update"
) -> Inventory:
    """The inventory a body describes, with upstream's defaults and capacity rule per version."""
    fields = {
        k: v for k, v in data.items() if k not in ("resource_provider_generation", "resource_class")
    }
    inventory = Inventory(**fields)
    if not capacity.valid_capacity(
        inventory, reserved_may_equal_total=req.version.matches((1, 26))
    ):
        relation = "greater than" if req.version.matches((1, 26)) else "greater than or equal to"
        raise HTTPError(
            400,
            f"Unable to {action} inventory for resource provider {provider.uuid}: Invalid "
            f"inventory for '{rc}' on resource provider '{provider.uuid}'. The reserved value "
            f"is {relation} total.",
        )
    return inventory


def _check_generation(provider: ResourceProvider, seen: int) -> None:
    if provider.generation != seen:
        raise exceptions.ConcurrentUpdate("resource provider generation conflict")


def list_inventories(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/inventories"""
    req.authorize("placement:resource_providers:inventories:list")
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        stored = inventories.for_provider(conn, provider)
    body = _inventories_body(provider.generation, {rc: s.inventory for rc, s in stored.items()})
    return req.respond(body, last_modified=_newest(stored.values()))


def show_inventory(req: PlacementRequest) -> Response:
    """GET /resource_providers/{uuid}/inventories/{resource_class}"""
    req.authorize("placement:resource_providers:inventories:show")
    rc = req.path_params["resource_class"]
    with req.read() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        stored = inventories.for_provider(conn, provider).get(rc)
    if stored is None:
        raise exceptions.NotFound(f"No inventory of class {rc} for {provider.uuid}")
    return req.respond(
        _one_body(provider.generation, stored.inventory), last_modified=stored.last_modified
    )


def create_inventory(req: PlacementRequest) -> Response:
    """POST /resource_providers/{uuid}/inventories -> 201, Location

    {"resource_class": "DISK_GB", "total": 2048, "reserved": 512}
    """
    req.authorize("placement:resource_providers:inventories:create")
    uuid = req.path_params["uuid"]
    with req.write() as conn:
        provider = providers.get(conn, uuid)
        data = req.json_body(schema.NEW_INVENTORY)
        rc = data["resource_class"]
        inventory = _inventory(req, provider, rc, data, action="create")
        try:
            generation = inventories.add(conn, provider, rc, inventory)
        except inventories.UnknownResourceClass as exc:
            raise HTTPError(
                400, f"Unable to create inventory for resource provider {uuid}: {exc}"
            ) from None
    return req.respond(
        _one_body(generation, inventory),
        status=201,
        headers={"location": f"/resource_providers/{uuid}/inventories/{rc}"},
    )


def set_inventories(req: PlacementRequest) -> Response:
    """PUT /resource_providers/{uuid}/inventories

    {"resource_provider_generation": 2, "inventories": {"VCPU": {"total": 8}}}
    """
    req.authorize("placement:resource_providers:inventories:update")
    uuid = req.path_params["uuid"]
    with req.write() as conn:
        provider = providers.get(conn, uuid)
        data = req.json_body(schema.INVENTORIES)
        _check_generation(provider, data["resource_provider_generation"])
        wanted = {
            rc: _inventory(req, provider, rc, fields) for rc, fields in data["inventories"].items()
        }
        try:
            provider = inventories.replace(conn, provider, wanted)
        except inventories.UnknownResourceClass as exc:
            raise HTTPError(
                400,
                f"Unknown resource class in inventory for resource provider {uuid}: {exc}",
            ) from None
        except exceptions.InventoryInUse as exc:
            raise exceptions.InventoryInUse(f"update conflict: {exc}") from None
    return req.respond(_inventories_body(provider.generation, wanted))


def update_inventory(req: PlacementRequest) -> Response:
    """PUT /resource_providers/{uuid}/inventories/{resource_class}

    {"resource_provider_generation": 2, "total": 8, "allocation_ratio": 16.0}
    """
    req.authorize("placement:resource_providers:inventories:update")
    uuid, rc = req.path_params["uuid"], req.path_params["resource_class"]
    with req.write() as conn:
        provider = providers.get(conn, uuid)
        data = req.json_body(schema.INVENTORY)
        _check_generation(provider, data["resource_provider_generation"])
        inventory = _inventory(req, provider, rc, data)
        try:
            generation = inventories.update(conn, provider, rc, inventory)
        except inventories.NoSuchInventory as exc:
            raise HTTPError(400, str(exc)) from None
    return req.respond(_one_body(generation, inventory))


def delete_inventory(req: PlacementRequest) -> Response:
    """DELETE /resource_providers/{uuid}/inventories/{resource_class} -> 204"""
    req.authorize("placement:resource_providers:inventories:delete")
    rc = req.path_params["resource_class"]
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        try:
            inventories.delete(conn, provider, rc)
        except exceptions.InventoryInUse as exc:
            raise exceptions.InventoryInUse(
                f"Unable to delete inventory of class {rc}: {exc}", code=exc.code
            ) from None
    return req.no_content()


def delete_inventories(req: PlacementRequest) -> Response:
    """DELETE /resource_providers/{uuid}/inventories -> 204 (from 1.5; 405 before)"""
    if not req.version.matches((1, 5)):
        raise HTTPError(
            405,
            "The method DELETE is not allowed for this resource.",
            headers={"allow": "GET, POST, PUT"},
        )
    req.authorize("placement:resource_providers:inventories:delete")
    with req.write() as conn:
        provider = providers.get(conn, req.path_params["uuid"])
        inventories.replace(conn, provider, {})
    return req.no_content()

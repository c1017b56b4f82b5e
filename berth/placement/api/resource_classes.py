"""Resource classes: /resource_classes and /resource_classes/{name}, from 1.2."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.placement.api.request import PlacementRequest, validate
from berth.placement.api.schemas import resource_class as schema
from berth.placement.store import resource_classes
from berth.placement.store.resource_classes import ResourceClass

_SINCE = (1, 2)
# From 1.7 PUT creates the class named in the path, without a body.
_PUT_CREATES = (1, 7)


def _class_url(name: str) -> str:
    return f"/resource_classes/{name}"


def _serialize(rc: ResourceClass) -> dict[str, Any]:
    """{"name": "CUSTOM_GOLD", "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_GOLD"}]}"""
    return {"name": rc.name, "links": [{"rel": "self", "href": _class_url(rc.name)}]}


def list_resource_classes(req: PlacementRequest) -> Response:
    """GET /resource_classes -> {"resource_classes": [<class>, ...]}"""
    req.require_version(_SINCE)
    req.authorize("placement:resource_classes:list")
    with req.read() as conn:
        found = resource_classes.list_classes(conn)
    last_modified = max((rc.last_modified for rc in found), default=None)
    return req.respond(
        {"resource_classes": [_serialize(rc) for rc in found]}, last_modified=last_modified
    )


def create_resource_class(req: PlacementRequest) -> Response:
    """POST /resource_classes {"name": "CUSTOM_GOLD"} -> 201 with Location, no body."""
    req.require_version(_SINCE)
    req.authorize("placement:resource_classes:create")
    data = req.json_body(schema.CUSTOM_CLASS)
    with req.write() as conn:
        rc = resource_classes.create(conn, data["name"])
    return req.respond(None, 201, headers={"location": _class_url(rc.name)})


def show_resource_class(req: PlacementRequest) -> Response:
    """GET /resource_classes/{name} -> <class>"""
    req.require_version(_SINCE)
    req.authorize("placement:resource_classes:show")
    with req.read() as conn:
        rc = resource_classes.get(conn, req.path_params["name"])
    return req.respond(_serialize(rc), last_modified=rc.last_modified)


def update_resource_class(req: PlacementRequest) -> Response:
    """PUT /resource_classes/{name}

    1.2 to 1.6: {"name": "CUSTOM_NEW"} renames a custom class -> 200 with the class.
    From 1.7: no body; creates the class (201) or confirms it exists (204), with Location.
    """
    req.require_version(_SINCE)
    req.authorize("placement:resource_classes:update")
    name = req.path_params["name"]
    if req.version.matches(_PUT_CREATES):
        validate({"name": name}, schema.CUSTOM_CLASS)
        with req.write() as conn:
            _, created = resource_classes.ensure(conn, name)
        return req.respond(None, 201 if created else 204, headers={"location": _class_url(name)})
    data = req.json_body(schema.CUSTOM_CLASS)
    with req.write() as conn:
        rc = resource_classes.rename(conn, name, data["name"])
    return req.respond(_serialize(rc))


def delete_resource_class(req: PlacementRequest) -> Response:
    """DELETE /resource_classes/{name} -> 204; standard classes and classes in use stay."""
    req.require_version(_SINCE)
    req.authorize("placement:resource_classes:delete")
    with req.write() as conn:
        resource_classes.delete(conn, req.path_params["name"])
    return req.no_content()

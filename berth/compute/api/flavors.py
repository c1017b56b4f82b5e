"""/flavors, their extra specs (/flavors/{id}/os-extra_specs) and who may use a private one
(/flavors/{id}/os-flavor-access, and the addTenantAccess/removeTenantAccess actions).

Everyone lists the public flavors and the private ones their project was given; an admin lists
by ``is_public`` (true by default, ``none`` for all) and sees every flavor. Only admins create,
change and delete flavors, their extra specs and their access lists.

Microversions: 2.7 refuses access grants on a public flavor (409; before, they were recorded and
meant nothing); 2.55 adds ``description`` (create, ``PUT``, every view); 2.61 shows
``extra_specs`` in the flavor's detailed views.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import Connection, RowMapping
from starlette.responses import Response

from berth.compute import exceptions
from berth.compute import flavors as rules
from berth.compute.api import paging
from berth.compute.api.request import ComputeRequest
from berth.compute.db import flavors as store
from berth.compute.db.errors import Duplicate

PUBLIC_ACCESS_REFUSED = (2, 7)  # addTenantAccess on a public flavor is a 409
FLAVOR_DESCRIPTION = (2, 55)  # description in create, PUT /flavors/{id} and the views
FLAVOR_EXTRA_SPECS = (2, 61)  # extra_specs in the detailed views

_ACCESS_RULES = {
    "addTenantAccess": "os-flavor-access:add_tenant_access",
    "removeTenantAccess": "os-flavor-access:remove_tenant_access",
}


# Flavors


def index(req: ComputeRequest) -> Response:
    """``{"flavors": [{"id": "1", "name": "m1.tiny", "links": [...]}], "flavors_links": [...]}``"""
    return _listing(req, detail=False)


def detail(req: ComputeRequest) -> Response:
    return _listing(req, detail=True)


def show(req: ComputeRequest) -> Response:
    with req.service.api_db.read() as conn:
        flavor = _visible(req, conn, req.param("flavor_id"))
        return req.respond({"flavor": _transform_flavor(req, conn, flavor)})


def create(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-flavor-manage:create")
    body = req.json_body()
    new = rules.parse_new(body["flavor"])
    with req.service.api_db.write() as conn:
        try:
            flavor = store.create(
                conn,
                flavorid=new.flavorid,
                name=new.name,
                vcpus=new.vcpus,
                memory_mb=new.memory_mb,
                root_gb=new.root_gb,
                ephemeral_gb=new.ephemeral_gb,
                swap=new.swap,
                rxtx_factor=new.rxtx_factor,
                is_public=new.is_public,
                description=new.description,
            )
        except Duplicate as exc:
            what = "ID" if exc.what == "flavor id" else "name"
            raise exceptions.Conflict(f"Flavor with {what} {exc.value} already exists.") from None
        return req.respond({"flavor": _transform_flavor(req, conn, flavor)})


def update(req: ComputeRequest) -> Response:
    """``PUT {"flavor": {"description": "..."}}`` (2.55): a flavor's one changeable field."""
    if not req.at_least(FLAVOR_DESCRIPTION):
        raise exceptions.NotFound("The resource could not be found.")
    req.authorize("os_compute_api:os-flavor-manage:update")
    body = req.resource_body("flavor")
    if set(body) != {"description"}:
        raise exceptions.BadRequest(
            "Invalid input for flavor: 'description' is required and the only field allowed."
        )
    description = rules.check_description(body["description"])
    flavor_id = req.param("flavor_id")
    with req.service.api_db.write() as conn:
        if not store.update_description(conn, flavor_id, description):
            raise _no_flavor(flavor_id)
        flavor = store.get(conn, flavor_id)
        assert flavor is not None
        return req.respond({"flavor": _transform_flavor(req, conn, flavor)})


def delete(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-flavor-manage:delete")
    flavor_id = req.param("flavor_id")
    with req.service.api_db.write() as conn:
        if not store.delete(conn, flavor_id):
            raise _no_flavor(flavor_id)
    return req.no_content(202)


def _listing(req: ComputeRequest, *, detail: bool) -> Response:
    page = paging.parse(req)
    params = dict(req.query_items)
    sort_key = params.get("sort_key") or "flavorid"
    sort_dir = params.get("sort_dir") or "asc"
    if sort_key not in rules.SORT_KEYS:
        raise exceptions.BadRequest(f"Invalid sort_key {sort_key!r}")
    if sort_dir not in ("asc", "desc"):
        raise exceptions.BadRequest(f"Invalid sort_dir {sort_dir!r}: asc or desc")
    minimums = {
        "min_memory_mb": _minimum(params, "minRam"),
        "min_root_gb": _minimum(params, "minDisk"),
    }
    with req.service.api_db.read() as conn:
        if req.is_admin:
            # True (the default): public ones and those given to the admin's project.
            is_public = rules.parse_is_public(params.get("is_public"))
            rows = store.list_flavors(
                conn,
                visible_to=req.project_id if is_public else None,
                is_public=False if is_public is False else None,
                include_disabled=True,
                **minimums,
            )
        else:
            rows = store.list_flavors(conn, visible_to=req.project_id, **minimums)
        ordered = _sorted(rows, sort_key, descending=sort_dir == "desc")
        shown = paging.after_marker(ordered, page, key=lambda row: row["flavorid"])
        if detail:
            views = [_transform_flavor(req, conn, row) for row in shown]
        else:
            views = [_transform_brief(req, row) for row in shown]
    last = shown[-1]["flavorid"] if shown else None
    return req.respond({"flavors": views, **paging.links(req, "flavors", shown, page, last)})


def _minimum(params: Mapping[str, str], name: str) -> int | None:
    """A ``minRam``/``minDisk`` filter: an integer from 0 to the largest the column holds."""
    value = params.get(name)
    if value is None:
        return None
    try:
        number = int(value)
    except ValueError:
        raise exceptions.BadRequest(f"Invalid {name} filter [{value}]") from None
    if not 0 <= number <= rules.MAX_INT:
        raise exceptions.BadRequest(
            f"Invalid {name} filter [{value}]: an integer from 0 to {rules.MAX_INT}."
        )
    return number


def _sorted(rows: list[RowMapping], key: str, *, descending: bool) -> list[RowMapping]:
    by_id = sorted(rows, key=lambda row: row["flavorid"])
    if key == "flavorid":
        return by_id[::-1] if descending else by_id
    # None (a flavor without a description) sorts first, as it does in the databases.
    return sorted(
        by_id,
        key=lambda row: (row[key] is not None, row[key] if row[key] is not None else 0),
        reverse=descending,
    )


# Extra specs


def list_extra_specs(req: ComputeRequest) -> Response:
    """``{"extra_specs": {"hw:cpu_policy": "dedicated", "resources:VCPU": "2"}}``"""
    req.authorize("os_compute_api:os-flavor-extra-specs:index")
    flavor_id = req.param("flavor_id")
    with req.service.api_db.read() as conn:
        _visible(req, conn, flavor_id)
        return req.respond({"extra_specs": store.extra_specs(conn, flavor_id)})


def create_extra_specs(req: ComputeRequest) -> Response:
    """``POST {"extra_specs": {...}}`` adds or replaces these keys; the others stay."""
    req.authorize("os_compute_api:os-flavor-extra-specs:create")
    body = req.json_body()
    if not isinstance(body, dict) or "extra_specs" not in body or len(body) != 1:
        raise exceptions.BadRequest("Invalid input: a JSON object under 'extra_specs' is required.")
    specs = rules.check_extra_specs(body["extra_specs"])
    flavor_id = req.param("flavor_id")
    with req.service.api_db.write() as conn:
        if not store.set_extra_specs(conn, flavor_id, specs):
            raise _no_flavor(flavor_id)
    return req.respond({"extra_specs": specs})


def show_extra_spec(req: ComputeRequest) -> Response:
    """``{"hw:cpu_policy": "dedicated"}``"""
    req.authorize("os_compute_api:os-flavor-extra-specs:show")
    flavor_id, key = req.param("flavor_id"), req.param("key")
    with req.service.api_db.read() as conn:
        _visible(req, conn, flavor_id)
        specs = store.extra_specs(conn, flavor_id)
    if key not in specs:
        raise _no_spec(flavor_id, key)
    return req.respond({key: specs[key]})


def update_extra_spec(req: ComputeRequest) -> Response:
    """``PUT /flavors/{id}/os-extra_specs/{key}`` with ``{key: value}``."""
    req.authorize("os_compute_api:os-flavor-extra-specs:update")
    flavor_id, key = req.param("flavor_id"), req.param("key")
    body = req.json_body()
    if not isinstance(body, dict) or not body:
        raise exceptions.BadRequest("Invalid input: a JSON object {key: value} is required.")
    if len(body) > 1:
        raise exceptions.BadRequest("Request body contains too many items")
    if key not in body:
        raise exceptions.BadRequest("Request body and URI mismatch")
    value = rules.check_extra_spec(key, body[key])
    with req.service.api_db.write() as conn:
        if not store.set_extra_specs(conn, flavor_id, {key: value}):
            raise _no_flavor(flavor_id)
    return req.respond({key: value})


def delete_extra_spec(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:os-flavor-extra-specs:delete")
    flavor_id, key = req.param("flavor_id"), req.param("key")
    with req.service.api_db.write() as conn:
        if store.get(conn, flavor_id) is None:
            raise _no_flavor(flavor_id)
        if not store.delete_extra_spec(conn, flavor_id, key):
            raise _no_spec(flavor_id, key)
    return req.no_content(200)


# Access to private flavors


def list_access(req: ComputeRequest) -> Response:
    """``{"flavor_access": [{"flavor_id": "p1", "tenant_id": "alice"}]}``"""
    req.authorize("os_compute_api:os-flavor-access")
    flavor_id = req.param("flavor_id")
    with req.service.api_db.read() as conn:
        flavor = store.get(conn, flavor_id)
        if flavor is None:
            raise _no_flavor(flavor_id)
        if flavor["is_public"]:
            raise exceptions.NotFound("Access list not available for public flavors.")
        return req.respond(_transform_access(flavor_id, store.projects_of(conn, flavor_id)))


def action(req: ComputeRequest) -> Response:
    """``POST {"addTenantAccess": {"tenant": P}}`` or ``{"removeTenantAccess": {"tenant": P}}``."""
    body = req.json_body()
    if not isinstance(body, dict) or len(body) != 1:
        raise exceptions.BadRequest("Invalid input: exactly one action is expected.")
    ((name, argument),) = body.items()
    if name not in ("addTenantAccess", "removeTenantAccess"):
        raise exceptions.BadRequest(f"There is no such action: {name}")
    req.authorize(f"os_compute_api:{_ACCESS_RULES[name]}")
    project = argument.get("tenant") if isinstance(argument, dict) else None
    if not isinstance(project, str) or not 1 <= len(project) <= 255:
        raise exceptions.BadRequest(
            f"Invalid input for {name}: 'tenant' must be a project id of 1 to 255 characters."
        )
    flavor_id = req.param("flavor_id")
    with req.service.api_db.write() as conn:
        flavor = store.get(conn, flavor_id)
        if flavor is None:
            raise _no_flavor(flavor_id)
        if name == "addTenantAccess":
            if flavor["is_public"] and req.at_least(PUBLIC_ACCESS_REFUSED):
                raise exceptions.Conflict("Can not add access to a public flavor.")
            if not store.add_project(conn, flavor_id, project):
                raise exceptions.Conflict(
                    f"Flavor access already exists for flavor {flavor_id} and project "
                    f"{project} combination."
                )
        elif not store.remove_project(conn, flavor_id, project):
            raise exceptions.NotFound(
                f"Flavor access not found for {flavor_id} / {project} combination."
            )
        return req.respond(_transform_access(flavor_id, store.projects_of(conn, flavor_id)))


# Views


def _transform_brief(req: ComputeRequest, flavor: RowMapping) -> dict[str, Any]:
    """``{"id": "1", "name": "m1.tiny", "links": [...], "description": null}`` (2.55)"""
    view: dict[str, Any] = {
        "id": flavor["flavorid"],
        "name": flavor["name"],
        "links": _links(req, flavor["flavorid"]),
    }
    if req.at_least(FLAVOR_DESCRIPTION):
        view["description"] = flavor["description"]
    return view


def _transform_flavor(req: ComputeRequest, conn: Connection, flavor: RowMapping) -> dict[str, Any]:
    """::

    {"id": "1", "name": "m1.tiny", "ram": 512, "vcpus": 1, "disk": 1,
     "OS-FLV-EXT-DATA:ephemeral": 0, "OS-FLV-DISABLED:disabled": false, "swap": "",
     "rxtx_factor": 1.0, "os-flavor-access:is_public": true, "links": [...],
     "description": null (2.55), "extra_specs": {} (2.61)}
    """
    view: dict[str, Any] = {
        "id": flavor["flavorid"],
        "name": flavor["name"],
        "ram": flavor["memory_mb"],
        "vcpus": flavor["vcpus"],
        "disk": flavor["root_gb"],
        rules.EPHEMERAL: flavor["ephemeral_gb"],
        "OS-FLV-DISABLED:disabled": flavor["disabled"],
        # No swap is shown as an empty string.
        "swap": flavor["swap"] or "",
        "rxtx_factor": flavor["rxtx_factor"],
        rules.IS_PUBLIC: flavor["is_public"],
        "links": _links(req, flavor["flavorid"]),
    }
    if req.at_least(FLAVOR_DESCRIPTION):
        view["description"] = flavor["description"]
    if req.at_least(FLAVOR_EXTRA_SPECS):
        view["extra_specs"] = store.extra_specs(conn, flavor["flavorid"])
    return view


def _links(req: ComputeRequest, flavor_id: str) -> list[dict[str, str]]:
    return [
        {"rel": "self", "href": f"{req.base_url}/v2.1/flavors/{flavor_id}"},
        {"rel": "bookmark", "href": f"{req.base_url}/flavors/{flavor_id}"},
    ]


def _transform_access(flavor_id: str, projects: list[str]) -> dict[str, Any]:
    return {
        "flavor_access": [{"flavor_id": flavor_id, "tenant_id": project} for project in projects]
    }


# Checks


def _visible(req: ComputeRequest, conn: Connection, flavor_id: str) -> RowMapping:
    """The flavor, if the caller may see it: admins see all, others public and granted ones."""
    flavor = store.get(conn, flavor_id)
    if flavor is None or not (
        req.is_admin or flavor["is_public"] or req.project_id in store.projects_of(conn, flavor_id)
    ):
        raise _no_flavor(flavor_id)
    return flavor


def _no_flavor(flavor_id: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Flavor {flavor_id} could not be found.")


def _no_spec(flavor_id: str, key: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Flavor {flavor_id} has no extra specs with key {key}.")

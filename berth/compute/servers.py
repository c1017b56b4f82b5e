"""Servers: asking for them, finding them, deleting them (the compute API's side of the spine).

A create writes, in one API-database transaction, each server's BuildRequest (the server as
asked for, which the API shows until it has a cell), its RequestSpec (what the scheduler needs;
the super-conductor adds the ports), an InstanceMapping without a cell and its server-group
membership; then it casts ``build_instances`` to the super-conductor. No Instance exists yet.

The super-conductor later creates the Instance in a cell, points the mapping at that cell and
deletes the BuildRequest, in that order. So a server is found through its mapping: no cell, its
BuildRequest; a cell, its Instance there. A delete works on whichever of three states it finds
(see :func:`delete_server`).
"""

from __future__ import annotations

import logging
import string
import uuid as uuidlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from sqlalchemy.engine import Connection, RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.common.timeutils import utcnow
from berth.compute import (
    actions,
    exceptions,
    guest_input,
    quotas,
    server_tasks,
    snapshots,
    soft_delete,
)
from berth.compute import server_views as views
from berth.compute.cells import Cell, CellRegistry
from berth.compute.cleanup import release_server
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.db import (
    aggregates,
    build_requests,
    flavors,
    images,
    instances,
    keypairs,
    request_specs,
    server_groups,
)
from berth.compute.db import cells as mappings
from berth.compute.objects import request_spec as rs
from berth.compute.objects.build import PortEntry
from berth.compute.server_input import ListQuery, ServerRequest, random_text
from berth.compute.service import ComputeService
from berth.config import ComputeSettings

LOG = logging.getLogger(__name__)
_GIB = 1024**3
_RESERVATION_ALPHABET = string.ascii_lowercase + string.digits


# -- create ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reservation:
    """The servers one create request made, in order, and the id they share."""

    id: str
    server_uuids: list[str]


def new_reservation_id() -> str:
    """``r-`` and 8 random lowercase letters and digits, as upstream's reservation ids."""
    return "r-" + random_text(_RESERVATION_ALPHABET, 8)


def create_servers(
    service: ComputeService, context: RequestContext, request: ServerRequest
) -> Reservation:
    """Store ``max_count`` servers' builds and cast them to the super-conductor.

    When the cast fails, the builds are taken back before the error goes up."""
    if service.network is not None:
        check_networks(service.network, context, request.networks)
    groups = _security_group_ids(service, context, request.security_groups)
    quotas.prepare_project(service.api_db, context.project_id or "")
    with service.api_db.read() as conn:
        asked = check_request(conn, context, service.settings, request)
    reservation_id = new_reservation_id()
    with service.api_db.write() as conn:
        uuids = store_build(conn, context, asked, service.cells, reservation_id, groups)
    try:
        service.conductor.build_instances(uuids, context.request_id)
    except BusError:
        LOG.exception("could not cast build_instances for %s", uuids)
        with service.api_db.write() as conn:
            forget_build(conn, uuids)
        raise exceptions.ComputeError(
            "The conductor could not be reached; no server was created."
        ) from None
    return Reservation(reservation_id, uuids)


@dataclass(frozen=True)
class CheckedRequest:
    """A create request with the flavor and image it names, as the servers will keep them."""

    request: ServerRequest
    flavor: dict[str, Any]
    image: dict[str, Any]


def check_request(
    conn: Connection, context: RequestContext, settings: ComputeSettings, request: ServerRequest
) -> CheckedRequest:
    """Check what the request names against the API database: its flavor, its image (which
    fit each other), its availability zone and its key pair.

    Read before the write transaction, not under its lock: a BuildRequest keeps copies of the
    flavor and image, so one changed or deleted just after this read is booted as read, as
    when it changes just after the create (and on PostgreSQL and MariaDB a read inside the
    write transaction locked nothing either)."""
    flavor = requested_flavor(conn, context, request.flavor_ref)
    image, size = requested_image(conn, context, request.image_ref)
    check_fits(image, size, flavor)
    check_zone(conn, settings, request.availability_zone)
    check_key_name(conn, context.user_id or "", request.key_name)
    return CheckedRequest(request, flavor, image)


def store_build(
    conn: Connection,
    context: RequestContext,
    asked: CheckedRequest,
    cells: CellRegistry,
    reservation_id: str,
    security_group_ids: Sequence[str] = (),
) -> list[str]:
    """Admit as many servers of the checked request as the project's quotas allow
    (``max_count`` at most, ``min_count`` at least), and write each server's BuildRequest,
    RequestSpec, cell-less InstanceMapping and group membership."""
    project_id, user_id = context.project_id or "", context.user_id or ""
    request, flavor, image = asked.request, asked.flavor, asked.image
    # The group and its members are read here: new members join it under its lock.
    group = requested_group(conn, context, request.hints.group)
    held = quotas.hold_limits(conn, (project_id, user_id))
    guest_input.check_personality(held.project, request.personality)
    count = quotas.admit_servers(
        conn,
        cells,
        (project_id, user_id),
        held,
        quotas.ServerSize(vcpus=flavor["vcpus"], memory_mb=flavor["memory_mb"]),
        (request.min_count, request.max_count),
        len(request.metadata),
        group.uuid if group is not None else None,
    )
    request = replace(request, max_count=count)
    now = utcnow()
    uuids = [str(uuidlib.uuid4()) for _ in range(request.max_count)]
    for instance_uuid, name in zip(uuids, request.names(), strict=True):
        instance = {
            "uuid": instance_uuid,
            "name": name,
            "project_id": project_id,
            "user_id": user_id,
            "flavor": flavor,
            "image": image,
            "networks": request.networks,
            "availability_zone": request.availability_zone,
            "metadata": request.metadata,
            "tags": list(request.tags),
            "key_name": request.key_name,
            "reservation_id": reservation_id,
            "security_groups": list(security_group_ids),
            "description": request.description,
            "access_ip_v4": request.access_ip_v4,
            "access_ip_v6": request.access_ip_v6,
            "user_data": request.user_data,
            "config_drive": request.config_drive,
            "auto_disk_config": request.auto_disk_config,
            "injected": injected(request.admin_pass, request.personality),
            "scheduler_hints": {
                "group": request.hints.group,
                "same_host": list(request.hints.same_host),
                "different_host": list(request.hints.different_host),
            },
            "created_at": f"{now.isoformat()}Z",
        }
        build_requests.create(conn, instance_uuid, project_id, user_id, instance, now)
        spec = rs.RequestSpec(
            instance_uuids=(instance_uuid,),
            project_id=project_id,
            user_id=user_id,
            flavor=spec_flavor(flavor),
            image=rs.Image(
                id=image["id"],
                properties=image["properties"],
                min_disk=image["min_disk"],
                min_ram=image["min_ram"],
            ),
            availability_zone=request.availability_zone,
            hints=request.hints,
            server_group=group,
        )
        request_specs.create(conn, instance_uuid, spec.to_json())
        mappings.create_instance_mapping(conn, instance_uuid, project_id, user_id)
    if group is not None:
        server_groups.add_members(conn, group.uuid, uuids)
    return uuids


def injected(admin_pass: str, files: Sequence[guest_input.InjectedFile]) -> dict[str, Any]:
    """What the next spawn puts into the guest (an Instance's ``injected``)."""
    return {"admin_pass": admin_pass, "files": [f.to_json() for f in files]}


def forget_build(conn: Connection, uuids: list[str]) -> None:
    """Take back builds no conductor heard of (their BuildRequests are still there)."""
    for instance_uuid in uuids:
        if build_requests.delete(conn, instance_uuid):
            request_specs.delete(conn, instance_uuid)
            mappings.delete_instance_mapping(conn, instance_uuid)
            server_groups.remove_instance(conn, instance_uuid)


def requested_flavor(conn: Connection, context: RequestContext, flavorid: str) -> dict[str, Any]:
    """The flavor a request names, as an Instance keeps it; BadRequest when the caller may not
    use it."""
    row = flavors.get(conn, flavorid)
    if row is None or not (
        _privileged(context) or flavors.is_visible_to(conn, flavorid, context.project_id or "")
    ):
        raise exceptions.BadRequest(f"Invalid flavorRef: flavor {flavorid} could not be found.")
    if row["disabled"]:
        raise exceptions.BadRequest(f"Invalid flavorRef: flavor {flavorid} is disabled.")
    return {
        "id": row["flavorid"],
        "name": row["name"],
        "vcpus": row["vcpus"],
        "memory_mb": row["memory_mb"],
        "root_gb": row["root_gb"],
        "ephemeral_gb": row["ephemeral_gb"],
        "swap": row["swap"],
        "extra_specs": flavors.extra_specs(conn, flavorid),
    }


def spec_flavor(flavor: Mapping[str, Any]) -> rs.Flavor:
    return rs.Flavor(
        id=flavor["id"],
        name=flavor["name"],
        vcpus=flavor["vcpus"],
        memory_mb=flavor["memory_mb"],
        root_gb=flavor["root_gb"],
        ephemeral_gb=flavor["ephemeral_gb"],
        swap_mb=flavor["swap"],
        extra_specs=flavor["extra_specs"],
    )


def requested_image(
    conn: Connection, context: RequestContext, image_id: str
) -> tuple[dict[str, Any], int | None]:
    """The image as the BuildRequest holds it, and its size in bytes."""
    row = images.get(conn, image_id)
    visible = row is not None and (
        _privileged(context)
        or row["visibility"] in ("public", "community")
        or row["owner"] == context.project_id
    )
    if row is None or not visible:
        raise exceptions.BadRequest(f"Invalid imageRef: image {image_id} could not be found.")
    if row["status"] != "active":
        raise exceptions.BadRequest(
            f"Invalid imageRef: image {image_id} is {row['status']}, not active."
        )
    image = {
        "id": row["id"],
        "properties": dict(row["properties"] or {}),
        "min_disk": row["min_disk"],
        "min_ram": row["min_ram"],
    }
    return image, row["size"]


def check_fits(image: Mapping[str, Any], size: int | None, flavor: Mapping[str, Any]) -> None:
    """The flavor's memory and root disk hold what the image needs (a flavor with no root disk
    takes the image's size, so only memory is checked then)."""
    if image["min_ram"] > flavor["memory_mb"]:
        raise exceptions.BadRequest(
            f"Invalid flavorRef: the flavor's memory ({flavor['memory_mb']} MiB) is smaller than "
            f"the image's min_ram ({image['min_ram']} MiB)."
        )
    root_gb = flavor["root_gb"]
    if root_gb and image["min_disk"] > root_gb:
        raise exceptions.BadRequest(
            f"Invalid flavorRef: the flavor's disk ({root_gb} GiB) is smaller than the image's "
            f"min_disk ({image['min_disk']} GiB)."
        )
    if root_gb and size and size > root_gb * _GIB:
        raise exceptions.BadRequest(
            f"Invalid flavorRef: the flavor's disk ({root_gb} GiB) is smaller than the image "
            f"({size} bytes)."
        )


def check_zone(conn: Connection, settings: ComputeSettings, zone: str | None) -> None:
    if zone is None or zone == settings.default_availability_zone:
        return
    known = {aggregate.availability_zone for aggregate in aggregates.list_aggregates(conn)}
    if zone not in known:
        raise exceptions.BadRequest(
            f"Invalid availability_zone: the availability zone {zone!r} does not exist."
        )


def check_key_name(conn: Connection, user_id: str, key_name: str | None) -> None:
    """The key pair is the caller's own (an admin boots with their own keys too, as upstream)."""
    if key_name is not None and keypairs.get(conn, user_id, key_name) is None:
        raise exceptions.BadRequest("Invalid key_name provided.")


def requested_group(
    conn: Connection, context: RequestContext, group_uuid: str | None
) -> rs.ServerGroup | None:
    """The hinted group as the scheduler sees it: its members before this request (the new
    servers join it in the same transaction); hosts are the super-conductor's to fill."""
    if group_uuid is None:
        return None
    row = server_groups.get(conn, group_uuid)
    if row is None or not (_privileged(context) or row["project_id"] == context.project_id):
        raise exceptions.BadRequest(
            f"Invalid os:scheduler_hints/group: server group {group_uuid} could not be found."
        )
    rules = row["rules"] or {}
    return rs.ServerGroup(
        uuid=row["uuid"],
        policy=cast(rs.Policy, row["policy"]),
        members=tuple(server_groups.members(conn, group_uuid)),
        max_server_per_host=int(rules.get("max_server_per_host") or 1),
    )


def _security_group_ids(
    service: ComputeService, context: RequestContext, names: Sequence[str]
) -> list[str]:
    """The ids of the security groups a create names (by name or id, in the caller's
    project); one that is not there is a 400, a name several groups have a 409, as Nova's."""
    if not names:
        return []
    if service.network is None:
        # The API alone (tests): only the default group, which every new port gets, is known.
        unknown = [name for name in names if name != "default"]
        if unknown:
            raise exceptions.BadRequest(f"Security group {unknown[0]} not found.")
        return []
    groups = service.network.security_groups(project_id=context.project_id or "")
    found = []
    for name in names:
        matching = security_groups_called(groups, name)
        if not matching:
            raise exceptions.BadRequest(f"Security group {name} not found.")
        if len(matching) > 1:
            raise exceptions.Conflict(f"Multiple security groups named {name}; use its id.")
        found.append(str(matching[0]))
    return found


def security_groups_called(groups: Sequence[Mapping[str, Any]], name: str) -> list[str]:
    """The ids of the groups ``name`` means: the one with that id, else those with that name."""
    return [str(g["id"]) for g in groups if g["id"] == name] or [
        str(g["id"]) for g in groups if g["name"] == name
    ]


def check_networks(
    network: NetworkClient, context: RequestContext, networks: str | list[dict[str, str]]
) -> None:
    """The networks exist and the caller may use them; a port is the caller's and unused."""
    if isinstance(networks, str):
        return
    for entry in networks:
        kind, ident = ("port", entry["port"]) if "port" in entry else ("network", entry["uuid"])
        try:
            found = network.port(ident) if kind == "port" else network.network(ident)
        except NetworkError as exc:
            if exc.status != 404:
                raise
            found = None
        usable = found is not None and (
            _privileged(context)
            or found.get("project_id") == context.project_id
            or (kind == "network" and bool(found.get("shared")))
        )
        if found is None or not usable:
            raise exceptions.BadRequest(f"Invalid networks: {kind} {ident} could not be found.")
        if kind == "port" and found.get("device_id"):
            raise exceptions.Conflict(f"Port {ident} is in use by {found['device_id']}.")


# -- finding ---------------------------------------------------------------------------------


def get_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool] | None = None,
) -> views.Server:
    """The server, from its BuildRequest or its cell; NotFound when it is unknown, deleted, or
    another project's (to a non-admin). ``may_see(project_id)``, when given, decides instead
    whose servers the caller may see (the API passes its policy rule)."""
    for _ in range(2):
        mapping, building = _lookup(service, context, server_uuid, may_see)
        if mapping["cell_uuid"] is None:
            if building is not None:
                return views.from_build_request(building, mapping["id"])
            continue  # the super-conductor just put it in a cell: look again
        cell = _cell(service, mapping)
        with service.cells.database(cell).read() as conn:
            row = instances.get(conn, server_uuid, include_deleted=False)
            fault = instances.latest_fault(conn, server_uuid) if row is not None else None
        if row is None:
            break
        return views.from_instance(
            row, mapping["id"], fault, _zones(service, [row]).get(row["host"])
        )
    raise _not_found(server_uuid)


def list_servers(service: ComputeService, query: ListQuery, detail: bool) -> list[views.Server]:
    """One page of servers, newest first, BuildRequests and cells' instances together."""
    if query.matches_nothing:
        return []
    listed = _all_servers if query.changes_since is None else _changed_servers
    found = listed(service, query, detail)
    chosen = [server for server in found if _matches(server, query)]
    chosen.sort(key=lambda server: (server.created_at, server.order), reverse=True)
    return _page(chosen, query)


def _all_servers(service: ComputeService, query: ListQuery, detail: bool) -> list[views.Server]:
    """Every server of the listing's project: its mappings first, then the instances each cell
    holds of those mapped to it."""
    with service.api_db.read() as conn:
        # Queued ones too: a server being deleted on its host shows until its cell says deleted.
        mapped = mappings.list_instance_cells(conn, project_id=query.project_id)
        building = (
            {
                row["instance_uuid"]: row
                for row in build_requests.list_build_requests(conn, query.project_id)
            }
            if _lists_builds(query) and any(cell_id is None for _, _, cell_id in mapped)
            else {}
        )
        known_cells = service.cells.cells_read(conn)
    found: list[views.Server] = []
    in_cells: dict[int, dict[str, int]] = {}
    for uuid, mapping_id, cell_id in mapped:
        if cell_id is not None:
            in_cells.setdefault(cell_id, {})[uuid] = mapping_id
        elif uuid in building:
            found.append(views.from_build_request(building[uuid], mapping_id))
    for cell in known_cells:
        if cell.id in in_cells:
            rows, faults = _cell_instances(service, cell, query, detail)
            found += _instance_views(service, rows, faults, in_cells[cell.id], detail)
    return found


def _changed_servers(service: ComputeService, query: ListQuery, detail: bool) -> list[views.Server]:
    """A poller's listing (changes-since): the instances changed since then in each cell that
    holds some of the project's servers, and the BuildRequests made since, and then the mappings
    of those alone, so that a poll reads what changed, not every server the project has.

    The mappings are read after the cells: an instance shows from the cell its mapping names
    (a server moving between cells has a row in both). A BuildRequest shows unless its server
    showed from a cell: built after it was read and before its cell was, it is seen once."""
    with service.api_db.read() as conn:
        holding = mappings.cells_holding(conn, query.project_id)
        known_cells = [cell for cell in service.cells.cells_read(conn) if cell.id in holding]
        building = (
            {
                row["instance_uuid"]: row
                for row in build_requests.list_build_requests(
                    conn, query.project_id, created_since=query.changes_since
                )
            }
            if _lists_builds(query) and None in holding
            else {}
        )
    changed = {cell.id: _cell_instances(service, cell, query, detail) for cell in known_cells}
    uuids = {row["uuid"] for rows, _ in changed.values() for row in rows} | building.keys()
    if not uuids:
        return []
    with service.api_db.read() as conn:
        mapped = mappings.instance_cells_of(conn, uuids, query.project_id)
    found: list[views.Server] = []
    for cell_id, (rows, faults) in changed.items():
        here = {
            row["uuid"]: mapped[row["uuid"]][0]
            for row in rows
            if mapped.get(row["uuid"], (0, None))[1] == cell_id
        }
        found += _instance_views(service, rows, faults, here, detail)
    shown = {server.uuid for server in found}
    found += [
        views.from_build_request(row, mapped[uuid][0])
        for uuid, row in building.items()
        if uuid in mapped and uuid not in shown
    ]
    return found


def _instance_views(
    service: ComputeService,
    rows: Sequence[Mapping[str, Any]],
    faults: Mapping[str, RowMapping],
    order: Mapping[str, int],
    detail: bool,
) -> list[views.Server]:
    """The views of the instances among ``rows`` that ``order`` (uuid -> mapping id) names."""
    rows = [row for row in rows if row["uuid"] in order]
    zones = _zones(service, rows) if detail else {}
    return [
        views.from_instance(
            row, order[row["uuid"]], faults.get(row["uuid"]), zones.get(row["host"])
        )
        for row in rows
    ]


def _lists_builds(query: ListQuery) -> bool:
    """Whether servers still BuildRequests may match (they are all BUILD): the poller asks for
    ACTIVE and ERROR ones, and need not read the BuildRequests at all."""
    return query.statuses is None or views.BUILD in query.statuses


def _cell_instances(
    service: ComputeService, cell: Cell, query: ListQuery, detail: bool
) -> tuple[Sequence[Mapping[str, Any]], dict[str, RowMapping]]:
    """The live instances of one cell the listing may show, and the latest fault of those in
    ERROR when it shows details: those changed since ``changes-since`` only when it is given
    (the time filtered in SQL, on the project's rows), in one of the asked statuses only when
    some are (filtered before any view is built: the poller asks for one status of many)."""
    rows: Sequence[Mapping[str, Any]]
    with service.cells.database(cell).read() as conn:
        if query.changes_since is None:
            rows = instances.list_instances(conn, project_id=query.project_id)
        else:
            # Only the rows whose vm_state may show an asked status: a poller asking for
            # ERROR servers reads none of the many that are building or active.
            vm_states = None if query.statuses is None else views.vm_states_of(query.statuses)
            rows = instances.changed_since(conn, query.changes_since, query.project_id, vm_states)
        if query.statuses is not None:
            wanted = query.statuses
            rows = [
                row for row in rows if views.status_of(row["vm_state"], row["task_state"]) in wanted
            ]
        errors = [row["uuid"] for row in rows if row["vm_state"] == "error"]
        faults = instances.latest_faults(conn, errors) if detail and errors else {}
    return rows, faults


def _matches(server: views.Server, query: ListQuery) -> bool:
    return (
        (query.name is None or query.name.search(server.name) is not None)
        and _has_address(server, query)
        and (
            query.changes_since is None
            or (server.updated_at or server.created_at) >= query.changes_since
        )
        and (query.statuses is None or server.status in query.statuses)
        and (query.host is None or server.host == query.host)
        and (query.image is None or server.image_id == query.image)
        and (query.flavor is None or server.flavor_id == query.flavor)
        and (query.reservation_id is None or server.reservation_id == query.reservation_id)
        and query.tags.matches(server.tags)
    )


def _has_address(server: views.Server, query: ListQuery) -> bool:
    """Whether a fixed address of the server matches ``ip`` (IPv4) or ``ip6`` (IPv6); true
    when neither is asked."""
    if query.ip is None and query.ip6 is None:
        return True
    for port in server.network_info:
        for fixed in port.get("fixed_ips") or ():
            address = str(fixed["ip_address"])
            pattern = query.ip6 if ":" in address else query.ip
            if pattern is not None and pattern.match(address):
                return True
    return False


def _page(servers: list[views.Server], query: ListQuery) -> list[views.Server]:
    if query.marker is not None:
        ids = [server.uuid for server in servers]
        if query.marker not in ids:
            raise exceptions.BadRequest(f"marker [{query.marker}] not found")
        servers = servers[ids.index(query.marker) + 1 :]
    return servers[: query.limit]


def _lookup(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool] | None = None,
) -> tuple[RowMapping, RowMapping | None]:
    """The server's mapping (and its BuildRequest while it has no cell)."""
    with service.api_db.read() as conn:
        mapping = mappings.get_instance_mapping(conn, server_uuid)
        building = build_requests.get(conn, server_uuid) if mapping is not None else None
    if may_see is None:

        def may_see(project_id: str) -> bool:
            return _privileged(context) or project_id == context.project_id

    if mapping is None or not may_see(mapping["project_id"]):
        raise _not_found(server_uuid)
    if mapping["cell_uuid"] is None and mapping["queued_for_delete"]:
        raise _not_found(server_uuid)
    return mapping, building


def _cell(service: ComputeService, mapping: RowMapping) -> Cell:
    cell = service.cells.cell(mapping["cell_uuid"])
    if cell is None:  # a cell deleted under its mappings: the API database is inconsistent
        raise exceptions.ComputeError(f"Cell {mapping['cell_uuid']} is not mapped.")
    return cell


def _zones(service: ComputeService, rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The zone of each host of these instances (for those that do not name theirs)."""
    hosts = {row["host"] for row in rows if row["host"] and not row["availability_zone"]}
    if not hosts:
        return {}
    default = service.settings.default_availability_zone
    with service.api_db.read() as conn:
        return {host: aggregates.availability_zone_of(conn, host, default) for host in hosts}


def _privileged(context: RequestContext) -> bool:
    """An admin, or a service acting for one (what ``ComputeRequest.is_admin`` says)."""
    return context.is_admin or context.has_role("service")


def _not_found(server_uuid: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Instance {server_uuid} could not be found.")


# -- delete ----------------------------------------------------------------------------------


def delete_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool] | None = None,
    force: bool = False,
) -> None:
    """Delete a server in whichever state it is found (with ``reclaim_instance_interval``, a
    server that ran is only soft-deleted, ``berth.compute.soft_delete``, unless ``force``):

    (a) still a BuildRequest: delete it (the super-conductor, finding it gone, cleans up what
        it made), queue the mapping for delete and leave the server's group;
    (b) in a cell, on a host: mark it ``deleting`` and cast ``terminate_instance`` to the host;
    (c) in a cell without a host (an ERROR server, in cell0 say): release its allocation and
        ports, mark it deleted here.

    In (b) and (c) the mapping is queued for delete and the group left too, since nothing in a
    cell writes the API database, and a shelved server's image is deleted. A delete of a server whose delete is under way does nothing
    (as Nova, it answers 204 again: clients that delete twice, in a test's clean-up say, are
    not refused)."""
    for _ in range(2):
        mapping, _building = _lookup(service, context, server_uuid, may_see)
        if mapping["cell_uuid"] is None:
            if _delete_build(service, server_uuid):
                return
            continue  # the super-conductor got there first: the server has a cell now
        cell = _cell(service, mapping)
        deferred = service.settings.reclaim_instance_interval > 0 and not force
        if deferred and soft_delete.start(service, context, cell, server_uuid):
            return
        row = _start_delete(service, context, cell, server_uuid)
        if row is None:
            return
        if row["host"]:
            _terminate(service, cell, row)
        else:
            _delete_locally(service, cell, row)
        _forget_mapping(service, server_uuid)
        if row["vm_state"] in ("shelved", "shelved_offloaded"):
            snapshots.delete_shelved_image(service.images, server_uuid)
        return
    raise _not_found(server_uuid)


def _delete_build(service: ComputeService, server_uuid: str) -> bool:
    with service.api_db.write() as conn:
        if not build_requests.delete(conn, server_uuid):
            return False
        mappings.queue_instance_for_delete(conn, server_uuid)
        server_groups.remove_instance(conn, server_uuid)
    return True


def _start_delete(
    service: ComputeService, context: RequestContext, cell: Cell, server_uuid: str
) -> RowMapping | None:
    """The live instance, marked ``deleting`` when it is on a host, with its ``delete`` action
    (which the host's terminate adds its event to); None when its delete is under way."""
    with service.cells.database(cell).write() as conn:
        row = instances.get(conn, server_uuid, include_deleted=False)
        if row is None:
            raise _not_found(server_uuid)
        if row["task_state"] == "deleting":
            return None
        server_tasks.refuse_if_locked(context, row)
        if row["host"] and not instances.update(
            conn, server_uuid, {"task_state": "deleting"}, [row["task_state"]]
        ):
            raise exceptions.Conflict(f"Instance {server_uuid} changed; try the delete again.")
        actions.begin(
            conn, server_uuid, actions.DELETE, context.request_id,
            context.user_id or "", context.project_id or "",
        )  # fmt: skip
    return row


def _terminate(service: ComputeService, cell: Cell, row: RowMapping) -> None:
    try:
        service.cell_rpc.host(cell, row["host"]).terminate_instance(row["uuid"])
    except BusError:
        LOG.exception("could not cast terminate_instance for %s", row["uuid"])
        with service.cells.database(cell).write() as conn:
            instances.update(conn, row["uuid"], {"task_state": row["task_state"]}, ["deleting"])
        raise exceptions.ComputeError(
            f"The host of instance {row['uuid']} could not be reached; it was not deleted."
        ) from None


def _delete_locally(service: ComputeService, cell: Cell, row: RowMapping) -> None:
    if service.placement is not None and service.network is not None:
        ports = [PortEntry.from_json(entry) for entry in row["network_info"]]
        release_server(service.placement, service.network, row["uuid"], ports)
    with service.cells.database(cell).write() as conn:
        instances.mark_deleted(conn, row["uuid"])


def _forget_mapping(service: ComputeService, server_uuid: str) -> None:
    with service.api_db.write() as conn:
        mappings.queue_instance_for_delete(conn, server_uuid)
        server_groups.remove_instance(conn, server_uuid)

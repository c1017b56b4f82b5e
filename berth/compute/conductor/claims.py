"""Keeping a host for a server: the claim, its group's admission and the ports' bindings, tried
selection by selection (a build, a reschedule and every move go through here), and the hosts a
server group's members are on, which the scheduler needs to apply the group's policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from berth.common.db import Database
from berth.compute.cells import CellRegistry
from berth.compute.clients.network import BindingRefused, NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import ports
from berth.compute.db import cells as cell_store
from berth.compute.db import group_placements, instances, server_groups
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection


def with_group_hosts(api_db: Database, cells: CellRegistry, spec: RequestSpec) -> RequestSpec:
    """The spec with the hosts its server group's other members are on now (the API only knows
    the members; the cells know where they are)."""
    group = spec.server_group
    if group is None:
        return spec
    with api_db.read() as conn:
        members = [
            m for m in server_groups.members(conn, group.uuid) if m not in spec.instance_uuids
        ]
        mappings = [cell_store.get_instance_mapping(conn, m) for m in members]
    placed: list[tuple[str, str]] = []
    for member, mapping in zip(members, mappings, strict=True):
        cell = cells.cell(mapping["cell_uuid"]) if mapping and mapping["cell_uuid"] else None
        if cell is None or cell.is_cell0:
            continue
        with cells.database(cell).read() as conn:
            row = instances.get(conn, member, include_deleted=False)
        if row is not None and row["host"]:
            placed.append((member, row["host"]))
    return dataclasses.replace(
        spec,
        server_group=dataclasses.replace(
            group, members=tuple(m for m, _ in placed), hosts=tuple(h for _, h in placed)
        ),
    )


def bind_first(
    api_db: Database,
    placement: PlacementClient,
    network: NetworkClient,
    instance: Mapping[str, Any],
    made: Sequence[PortEntry],
    selections: Sequence[Selection],
    attempts: list[BuildAttempt],
    first_claimed: bool = True,
    bound: dict[str, Mapping[str, Any]] | None = None,
    grouped: bool = True,
) -> int | None:
    """The index of the first selection whose host takes the server and every port. The
    scheduler claimed the first of its selections (``first_claimed``); any other is claimed here.
    The server's group must admit it on the host (decided in the API database, where concurrent
    builds of one group cannot race), then every port must bind; a refusal releases the claim.
    ``attempts`` collects each host that failed and why. When none takes it, the caller ends
    the build and its group forgets the server (``group_placements.release``). ``bound``
    collects the ports as bound on the chosen host (``ports.bind_all``). ``grouped`` False: the
    caller knows the server is in no group (a server joins its group as it is created, when its
    RequestSpec is written naming the group), so there is no admission to ask for."""
    uuid = instance["uuid"]
    for index, selection in enumerate(selections):
        host = selection.host
        if (index > 0 or not first_claimed) and not placement.claim(
            uuid, selection.allocations, instance["project_id"], instance["user_id"]
        ):
            attempts.append(BuildAttempt(host, "its resources were claimed by another server"))
            continue
        if grouped and not group_placements.admit(api_db, uuid, host):
            attempts.append(BuildAttempt(host, group_placements.REFUSED))
            placement.release(uuid)
            continue
        try:
            ports.bind_all(network, made, host, selection.port_allocations, bound)
            return index
        except BindingRefused as exc:
            attempts.append(BuildAttempt(host, str(exc)))
            placement.release(uuid)
    return None

"""Cold migrate and resize between cells: the super-conductor's part (it alone reaches every
cell; a cell conductor knows only its own).

A server moves to another cell only when its own cell has no room for it and the caller may
(Nova's rule ``compute:servers:resize:cross_cell``). Its records move with it:

1. Once the destination is claimed and the ports bound there (as for any move), the server's
   Instance (with its faults and instance actions) and its migration are copied into the target
   cell, the Instance copy *hidden* (left out of every list) so that the server shows once.
2. The destination host starts the copy (``start_copy``, a call); a failure releases that
   destination and tries the next alternate, and with none left the copies are removed and the
   server put back (``move_steps.put_back``).
3. Started (the ports, bound to the destination in step 1, are active there already): the
   target's copy becomes the server (VERIFY_RESIZE, shown), the InstanceMapping points at the target cell and the source's copies are hidden.
4. Confirm: the source host drops its copy, the migration's allocation goes and the source
   cell forgets the server. Revert: the destination drops its copy, the source's records are
   shown again with the history the target gathered, everything is put back there, the mapping
   returns and the target cell forgets the server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from sqlalchemy.engine import RowMapping

from berth.common.db import Database
from berth.compute import actions
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import claims, move_steps, ports
from berth.compute.db import cells as cell_store
from berth.compute.db import instance_actions, instances, migrations
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC, ServiceUnreachable

LOG = logging.getLogger(__name__)

CONFIRM = "conductor_confirm_snapshot_based_resize"


class Services(Protocol):
    """What a cross-cell move uses (the super-conductor's ``Mover`` has them all)."""

    api_db: Database
    cells: CellRegistry
    placement: PlacementClient
    network: NetworkClient
    cell_rpc: CellRPC


def move_across(
    services: Services,
    source: Cell,
    instance: RowMapping,
    migration: RowMapping,
    selections: Sequence[Selection],
    chosen: int,
    attempts: list[BuildAttempt],
) -> None:
    """Steps 1 to 3, from a claimed and bound ``selections[chosen]`` in another cell."""
    uuid = instance["uuid"]
    source_db = services.cells.database(source)
    target = services.cells.cell(selections[chosen].cell_uuid)
    assert target is not None, "the scheduler chose a host of an unknown cell"
    target_db = services.cells.database(target)
    with source_db.write() as conn:
        migrations.update(conn, migration["uuid"], {"cross_cell_move": True, "status": "migrating"})
        if not instances.update(conn, uuid, {"task_state": "resize_migrating"}, move_steps.MOVING):
            LOG.info("server %s changed during its move; the move stops here", uuid)
            return
        instance = instances.get(conn, uuid)  # type: ignore[assignment]
        migration = migrations.get(conn, migration["uuid"])  # type: ignore[assignment]
        faults = instances.faults(conn, uuid)
        history = [
            (row, instance_actions.events(conn, row["id"]))
            for row in instance_actions.list_actions(conn, uuid)
        ]
    entries = [PortEntry.from_json(e) for e in instance["network_info"]]
    index = chosen
    while True:
        selection = selections[index]
        _copy(target_db, instance, migration, selection, faults, history)
        failure = _start(services, target, selection, uuid, migration["uuid"])
        if failure is None:
            _switch_cells(services, source, target, instance, migration, selection, entries)
            return
        attempts.append(BuildAttempt(selection.host, failure))
        services.placement.release(uuid)
        rest = selections[index + 1 :]
        following = claims.bind_first(
            services.api_db, services.placement, services.network, instance, entries, rest,
            attempts, first_claimed=False,
        )  # fmt: skip
        if following is None:
            _forget(target_db, uuid, migration["uuid"], "error")
            message = failed_everywhere(attempts)
            move_steps.put_back(
                source_db, services.api_db, services.placement, services.network, instance,
                migration, message, selection.host,
            )  # fmt: skip
            return
        index += 1 + following


def confirm(services: Services, instance_uuid: str, migration_uuid: str) -> None:
    """Step 4, confirmed: the server stays in the target cell."""
    found = _cells_of(services, instance_uuid, migration_uuid, "confirming")
    if found is None:
        return
    source, target, moved = found
    services.cell_rpc.host(source, moved["source_compute"]).drop_copy(instance_uuid)
    services.placement.release(migration_uuid)
    with services.cells.database(source).write() as conn:
        migrations.update(conn, migration_uuid, {"status": "confirmed"})
        instance_actions.purge(conn, instance_uuid)
        instances.purge(conn, instance_uuid)
    with services.cells.database(target).write() as conn:
        now = instances.get(conn, instance_uuid, include_deleted=False)
        stopped = now is not None and now["power_state"] == 4
        instances.update(
            conn, instance_uuid, {"vm_state": "stopped" if stopped else "active"},
            expected_vm_states=["resized"],
        )  # fmt: skip
        migrations.update(conn, migration_uuid, {"status": "confirmed"}, ["confirming"])
        actions.step_done(conn, instance_uuid, "confirmResize", CONFIRM, actions.SUCCESS)


def revert(services: Services, instance_uuid: str, migration_uuid: str) -> None:
    """Step 4, reverted: the server goes back to its source cell as it was."""
    found = _cells_of(services, instance_uuid, migration_uuid, "reverting")
    if found is None:
        return
    source, target, moved = found
    services.cell_rpc.host(target, moved["dest_compute"]).drop_copy(instance_uuid)
    source_db = services.cells.database(source)
    with services.cells.database(target).read() as conn:
        history = [
            (row, instance_actions.events(conn, row["id"]))
            for row in instance_actions.list_actions(conn, instance_uuid)
        ]
    with source_db.write() as conn:
        instance_actions.purge(conn, instance_uuid)
        instance_actions.copy(conn, history)
        instances.update(conn, instance_uuid, {"hidden": False})
        migrations.update(conn, migration_uuid, {"hidden": False, "status": "reverting"})
        instance = instances.get(conn, instance_uuid)
        migration = migrations.get(conn, migration_uuid)
    assert instance is not None and migration is not None
    move_steps.put_back(
        source_db, services.api_db, services.placement, services.network, instance, migration,
        None,
    )  # fmt: skip
    with services.api_db.write() as conn:
        cell_store.set_instance_cell(conn, instance_uuid, source.id)
    _forget(services.cells.database(target), instance_uuid, migration_uuid, "reverted")


def _copy(
    target_db: Database,
    instance: Mapping[str, Any],
    migration: Mapping[str, Any],
    selection: Selection,
    faults: Sequence[RowMapping],
    history: list[tuple[RowMapping, list[RowMapping]]],
) -> None:
    """The server's records in the target cell, on ``selection``'s host, hidden."""
    at = {"dest_compute": selection.host, "dest_node": selection.node, "dest_host": selection.host}
    with target_db.write() as conn:
        instances.copy_to(
            conn, instance, {"host": selection.host, "node": selection.node, "hidden": True}, faults
        )
        instance_actions.purge(conn, instance["uuid"])
        instance_actions.copy(conn, history)
        migrations.copy_to(conn, migration, at)


def _start(
    services: Services, target: Cell, selection: Selection, uuid: str, migration_uuid: str
) -> str | None:
    try:
        return services.cell_rpc.host(target, selection.host).start_copy(
            uuid, migration_uuid, selection.port_allocations
        )
    except ServiceUnreachable as exc:
        return str(exc)


def _switch_cells(
    services: Services,
    source: Cell,
    target: Cell,
    instance: Mapping[str, Any],
    migration: Mapping[str, Any],
    selection: Selection,
    entries: Sequence[PortEntry],
) -> None:
    """Step 3: the copy runs, the target cell's records become the server."""
    uuid = instance["uuid"]
    network_info = ports.refreshed(services.network, entries)
    with services.cells.database(target).write() as conn:
        instances.update(conn, uuid, {
            "flavor": migration["new_flavor"], "vm_state": "resized", "task_state": None,
            "hidden": False, "network_info": [entry.to_json() for entry in network_info],
        })  # fmt: skip
        migrations.update(conn, migration["uuid"], {"status": "finished"})
        actions.step_done(
            conn, uuid, move_steps.action_of(migration), move_steps.SCHEDULE, actions.SUCCESS
        )
    with services.api_db.write() as conn:
        cell_store.set_instance_cell(conn, uuid, target.id)
    with services.cells.database(source).write() as conn:
        instances.update(conn, uuid, {"hidden": True, "task_state": None})
        migrations.update(conn, migration["uuid"], {"hidden": True, "status": "finished"})
    LOG.info(
        "server %s moved from %s in %s to %s in %s",
        uuid, instance["host"], source.name, selection.host, target.name,
    )  # fmt: skip


def _forget(db: Database, instance_uuid: str, migration_uuid: str, status: str) -> None:
    """A cell the server left: its copy and history go, its migration stays, hidden."""
    with db.write() as conn:
        instance_actions.purge(conn, instance_uuid)
        instances.purge(conn, instance_uuid)
        migrations.update(conn, migration_uuid, {"hidden": True, "status": status})


def _cells_of(
    services: Services, instance_uuid: str, migration_uuid: str, status: str
) -> tuple[Cell, Cell, RowMapping] | None:
    """The move's source and target cells and the target's (shown) migration, in ``status``."""
    with services.api_db.read() as conn:
        mapping = cell_store.get_instance_mapping(conn, instance_uuid)
    target = services.cells.cell(mapping["cell_uuid"]) if mapping and mapping["cell_uuid"] else None
    if target is None:
        return None
    with services.cells.database(target).read() as conn:
        moved = migrations.get(conn, migration_uuid)
    if moved is None or moved["status"] != status:
        LOG.info("migration %s is not %s; nothing to do", migration_uuid, status)
        return None
    for cell in services.cells.cells(include_cell0=False):
        if cell.uuid == target.uuid:
            continue
        with services.cells.database(cell).read() as conn:
            if migrations.get(conn, migration_uuid) is not None:
                return cell, target, moved
    LOG.warning("migration %s has no source cell left", migration_uuid)
    return None

"""Cold migrate and resize: the conductors' side (docs/compute.md, "Moving a server").

Who holds which allocation, step by step:

1. ``migrate_server`` (the super-conductor): a migration row records the source host, both
   flavors and, per port, the providers its request groups use on the source. The server's
   allocation moves to the migration's consumer in one atomic write, so the source stays
   claimed while the scheduler claims the destination for the server's own consumer, with the
   new flavor and the ports' current resource requests, in the server's cell. The ports are
   bound to the destination with the providers of the chosen candidate (the next alternate is
   claimed when a binding is refused), then ``finish_resize`` goes to the destination host.
2. The destination host starts the server (``berth.compute.host.moves``): VERIFY_RESIZE, the
   migration ``finished``. A spawn failure there comes back as ``reschedule_move`` to the cell
   conductor, which gives up that destination and tries the alternates.
3. Confirm: the source host drops its copy and the migration's allocation. Revert: the
   destination drops its copy and the cell conductor puts everything back with
   :func:`put_back`, which is also how a move that found no destination ends: the source
   allocation returns to the server (replacing whatever it holds at the destination), the ports
   are bound to the source with their old providers, the server's group record returns there.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.common.db import Database
from berth.compute import actions
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import claims, cross_cell, move_steps, ports
from berth.compute.db import cells as cell_store
from berth.compute.db import group_placements, instances, migrations, request_specs
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import Destination, RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC, NoValidHost, SchedulerAPI, ServiceUnreachable
from berth.compute.servers import spec_flavor

LOG = logging.getLogger(__name__)

LIVE_SCHEDULE = "conductor_live_migrate_instance"
_NO_ALLOCATION = "Move failed: the server holds no allocation; heal it first."


class Mover:
    """The super-conductor's part of a move (step 1)."""

    def __init__(
        self,
        api_db: Database,
        cells: CellRegistry,
        placement: PlacementClient,
        network: NetworkClient,
        scheduler: SchedulerAPI,
        cell_rpc: CellRPC,
    ) -> None:
        self.api_db = api_db
        self.cells = cells
        self.placement = placement
        self.network = network
        self.scheduler = scheduler
        self.cell_rpc = cell_rpc

    def migrate_server(
        self,
        instance_uuid: str,
        flavor: Mapping[str, Any] | None,
        host: str | None,
        same_host: bool,
        request_id: str,
        may_leave_cell: bool = False,
    ) -> None:
        found = self._moving(instance_uuid, "resize_prep")
        if found is None:
            return
        cell, db, instance, document = found
        action = move_steps.RESIZE if flavor else move_steps.MIGRATE
        entries = [PortEntry.from_json(e) for e in instance["network_info"]]
        try:
            answered = [self.network.port(entry.port_id) for entry in entries]
            spec = self._spec(cell, instance, document, answered, flavor, host, same_host)
        except (ports.PortsUnusable, NetworkError) as exc:
            self._refuse(db, instance, action, "resize_prep", f"Move failed: {exc}")
            return
        with db.write() as conn:
            migration = migrations.create(
                conn, instance, migrations.RESIZE if flavor else migrations.MIGRATION,
                "pre-migrating", flavor or instance["flavor"], move_steps.bound_providers(answered),
            )  # fmt: skip
        if not self.placement.move_allocations(instance_uuid, migration["uuid"], "MIGRATION"):
            with db.write() as conn:
                migrations.update(conn, migration["uuid"], {"status": "error"})
            self._refuse(db, instance, action, "resize_prep", _NO_ALLOCATION)
            return
        try:
            selections = self._destinations(spec, may_leave_cell)
        except (NoValidHost, ServiceUnreachable) as exc:
            diagnosis = exc.diagnosis if isinstance(exc, NoValidHost) else None
            move_steps.put_back(
                db, self.api_db, self.placement, self.network, instance, migration, str(exc),
                diagnosis=diagnosis,
            )  # fmt: skip
            return
        attempts: list[BuildAttempt] = []
        chosen = claims.bind_first(
            self.api_db, self.placement, self.network, instance, entries, selections, attempts
        )
        if chosen is None:
            message = failed_everywhere(attempts)
            move_steps.put_back(
                db, self.api_db, self.placement, self.network, instance, migration, message
            )
            return
        move_steps.keep_flavor(self.api_db, instance_uuid, migration["new_flavor"])
        if selections[chosen].cell_uuid != cell.uuid:
            cross_cell.move_across(self, cell, instance, migration, selections, chosen, attempts)
            return
        move_steps.go_to(db, self.cell_rpc, cell, instance, migration, selections, chosen, attempts)

    def _destinations(self, spec: RequestSpec, may_leave_cell: bool) -> list[Selection]:
        """The claimed selection and its alternates in the server's cell, or, when it has no
        room and the move may leave it, in another."""
        try:
            (selections,) = self.scheduler.select_destinations(spec)
        except NoValidHost:
            if not may_leave_cell or spec.destination is None:
                raise
            anywhere = dataclasses.replace(
                spec, destination=dataclasses.replace(spec.destination, cell_uuid=None)
            )
            (selections,) = self.scheduler.select_destinations(anywhere)
        return selections

    def live_migrate_server(self, instance_uuid: str, host: str | None, request_id: str) -> None:
        """Live migrate: nothing moves until the destination runs the copy; a refused binding
        or a failed start there tries the next alternate, and with none left the server stays
        where it is, as it was (``_live_failed``)."""
        found = self._moving(instance_uuid, "migrating")
        if found is None:
            return
        cell, db, instance, document = found
        entries = [PortEntry.from_json(e) for e in instance["network_info"]]
        try:
            answered = [self.network.port(entry.port_id) for entry in entries]
            spec = self._spec(cell, instance, document, answered, None, host, same_host=False)
        except (ports.PortsUnusable, NetworkError) as exc:
            self._refuse(
                db, instance, move_steps.LIVE_MIGRATION, "migrating", f"Move failed: {exc}"
            )
            return
        with db.write() as conn:
            migration = migrations.create(
                conn, instance, migrations.LIVE_MIGRATION, "preparing", instance["flavor"],
                move_steps.bound_providers(answered),
            )  # fmt: skip
        if not self.placement.move_allocations(instance_uuid, migration["uuid"], "MIGRATION"):
            with db.write() as conn:
                migrations.update(conn, migration["uuid"], {"status": "error"})
            self._refuse(db, instance, move_steps.LIVE_MIGRATION, "migrating", _NO_ALLOCATION)
            return
        try:
            (selections,) = self.scheduler.select_destinations(spec)
        except (NoValidHost, ServiceUnreachable) as exc:
            diagnosis = exc.diagnosis if isinstance(exc, NoValidHost) else None
            self._live_failed(db, instance, migration, str(exc), diagnosis)
            return
        attempts: list[BuildAttempt] = []
        for index, selection in enumerate(selections):
            if self._prepare_live(cell, instance, migration, answered, selection, index, attempts):
                self._switch_over(cell, db, instance, migration, entries, selection)
                return
        self._live_failed(db, instance, migration, failed_everywhere(attempts))

    def _prepare_live(
        self,
        cell: Cell,
        instance: RowMapping,
        migration: RowMapping,
        answered: Sequence[Mapping[str, Any]],
        selection: Selection,
        index: int,
        attempts: list[BuildAttempt],
    ) -> bool:
        """Whether ``selection``'s host is claimed (the scheduler claimed the first), admits the
        server's group, takes an inactive binding of every port and starts the copy; on a
        refusal what this attempt made is undone and the reason kept in ``attempts``."""
        uuid, dest = instance["uuid"], selection.host
        if index > 0 and not self.placement.claim(
            uuid, selection.allocations, instance["project_id"], instance["user_id"]
        ):
            attempts.append(BuildAttempt(dest, "its resources were claimed by another server"))
            return False
        if not group_placements.admit(self.api_db, uuid, dest):
            attempts.append(BuildAttempt(dest, group_placements.REFUSED))
            self.placement.release(uuid)
            return False
        made: list[str] = []
        try:
            for port in answered:
                self.network.create_binding(
                    port["id"], dest, port.get("binding:vnic_type", "normal"),
                    selection.port_allocations.get(port["id"]),
                )  # fmt: skip
                made.append(port["id"])
            failure = self.cell_rpc.host(cell, dest).start_copy(
                uuid, migration["uuid"], selection.port_allocations
            )
        except (NetworkError, ServiceUnreachable) as exc:
            failure = str(exc)
        if failure is None:
            return True
        attempts.append(BuildAttempt(dest, failure))
        for port_id in made:
            self.network.delete_binding(port_id, dest)
        self.placement.release(uuid)
        return False

    def _switch_over(
        self,
        cell: Cell,
        db: Database,
        instance: RowMapping,
        migration: RowMapping,
        entries: Sequence[PortEntry],
        selection: Selection,
    ) -> None:
        """The copy runs on the destination: its bindings become the active ones, the source's
        go, the server is there; the source cleans up (``post_live_migration``)."""
        uuid, source = instance["uuid"], instance["host"]
        with db.write() as conn:
            migrations.update(conn, migration["uuid"], {
                "status": "running", "dest_compute": selection.host,
                "dest_node": selection.node, "dest_host": selection.host,
            })  # fmt: skip
        for entry in entries:
            self.network.activate(entry.port_id, selection.host)
            self.network.delete_binding(entry.port_id, source)
        network_info = ports.refreshed(self.network, entries)
        with db.write() as conn:
            instances.update(conn, uuid, {
                "host": selection.host, "node": selection.node, "task_state": None,
                "network_info": [entry.to_json() for entry in network_info],
            })  # fmt: skip
            actions.step_done(conn, uuid, move_steps.LIVE_MIGRATION, LIVE_SCHEDULE, actions.SUCCESS)
        LOG.info("server %s live migrated from %s to %s", uuid, source, selection.host)
        self.cell_rpc.host(cell, source).post_live_migration(uuid, migration["uuid"])

    def _live_failed(
        self,
        db: Database,
        instance: RowMapping,
        migration: RowMapping,
        failure: str,
        diagnosis: Diagnosis | None = None,
    ) -> None:
        """Nothing moved: the source allocation back to the server (the ports never left); the
        fault keeps the scheduler's ``diagnosis`` when no host could take it."""
        uuid = instance["uuid"]
        self.placement.move_allocations(migration["uuid"], uuid, "INSTANCE")
        group_placements.admit(self.api_db, uuid, instance["host"])
        with db.write() as conn:
            migrations.update(conn, migration["uuid"], {"status": "error"})
            instances.update(conn, uuid, {"task_state": None}, ["migrating"])
            instances.add_fault(
                conn, uuid, 500, failure, details=failure,
                diagnosis=None if diagnosis is None else diagnosis.to_json(),
            )  # fmt: skip
            actions.step_done(
                conn, uuid, move_steps.LIVE_MIGRATION, LIVE_SCHEDULE, actions.ERROR, details=failure
            )
        LOG.info("server %s stays on %s: %s", uuid, instance["host"], failure)

    def _moving(
        self, instance_uuid: str, task_state: str
    ) -> tuple[Cell, Database, RowMapping, Mapping[str, Any]] | None:
        """The server's cell, cell database, Instance and stored spec, when it still waits to
        move (in ``task_state``)."""
        with self.api_db.read() as conn:
            mapping = cell_store.get_instance_mapping(conn, instance_uuid)
            document = request_specs.get(conn, instance_uuid)
        cell = self.cells.cell(mapping["cell_uuid"]) if mapping and mapping["cell_uuid"] else None
        if cell is None or document is None:
            LOG.info("server %s is gone; nothing to move", instance_uuid)
            return None
        db = self.cells.database(cell)
        with db.read() as conn:
            instance = instances.get(conn, instance_uuid, include_deleted=False)
        if instance is None or instance["task_state"] != task_state:
            LOG.info("server %s is no longer waiting to move", instance_uuid)
            return None
        return cell, db, instance, document

    def _spec(
        self,
        cell: Cell,
        instance: RowMapping,
        document: Mapping[str, Any],
        answered: Sequence[Mapping[str, Any]],
        flavor: Mapping[str, Any] | None,
        host: str | None,
        same_host: bool,
    ) -> RequestSpec:
        """The server's spec for this move: its (new) flavor, its ports' requests as they are
        now, its cell (and host, if named), its own host ruled out unless allowed."""
        spec = RequestSpec.from_json(document)
        spec = dataclasses.replace(
            spec,
            instance_uuids=(instance["uuid"],),
            flavor=spec_flavor(flavor or instance["flavor"]),
            ports=tuple(ports.requests(self.network, answered)),
            ignore_hosts=frozenset() if same_host else frozenset({instance["host"]}),
            destination=Destination(host=host, cell_uuid=cell.uuid),
        )
        return claims.with_group_hosts(self.api_db, self.cells, spec)

    def _refuse(
        self, db: Database, instance: RowMapping, action: str, task_state: str, message: str
    ) -> None:
        """The move cannot start: the server stays as it is, the action says why."""
        LOG.info("server %s cannot move: %s", instance["uuid"], message)
        event = LIVE_SCHEDULE if action == move_steps.LIVE_MIGRATION else move_steps.SCHEDULE
        with db.write() as conn:
            instances.update(conn, instance["uuid"], {"task_state": None}, [task_state])
            instances.add_fault(conn, instance["uuid"], 400, message, details=message)
            actions.step_done(conn, instance["uuid"], action, event, actions.ERROR, details=message)

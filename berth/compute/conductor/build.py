"""The super-conductor: from a BuildRequest to an Instance on a host, in a cell.

For each server (DESIGN.md, "The spine", steps 2 to 7): get or create its ports before
scheduling; put their resource requests and segments in the RequestSpec; ask the scheduler (one
call, which claims the chosen host); bind every port to that host with the providers the mapping
names, and on a refused binding release the claim, claim the next alternate and bind again;
create the Instance in the chosen host's cell, map it there, delete the BuildRequest and cast the
build to the host with the remaining alternates. A server that cannot be placed goes to cell0 in
ERROR with a fault that explains why; the ports Berth made are deleted, the user's unbound.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute import actions, cleanup, queueing
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import claims, cross_cell, evacuate, moves, ports, queue, unshelve
from berth.compute.db import (
    build_queue,
    build_requests,
    group_placements,
    instances,
    request_specs,
)
from berth.compute.db import cells as cell_store
from berth.compute.db.errors import Duplicate
from berth.compute.objects.build import BuildAttempt, PortEntry, failed_everywhere
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import PortRequest, RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellRPC, NoValidHost, SchedulerAPI, ServiceUnreachable

LOG = logging.getLogger(__name__)


class SuperConductor:
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

    def build_instances(self, instance_uuids: Sequence[str], request_id: str = "") -> None:
        """Build the servers of one request, with one scheduler call."""
        builds: list[_Build] = []
        step = _Step(request_id, utcnow())
        for uuid in instance_uuids:
            try:
                build = self._prepare(uuid, step)
            except Exception:
                LOG.exception("build of %s failed unexpectedly", uuid)
                self._bury(
                    uuid, "Build failed: an unexpected error; the conductor's log has it.", step
                )
                continue
            if build is not None:
                builds.append(build)
        if not builds:
            return
        try:
            chosen = self._schedule(builds)
        except (NoValidHost, ServiceUnreachable) as exc:
            # A scheduler that timed out may still claim later: release by consumer in _bury.
            diagnosis = exc.diagnosis if isinstance(exc, NoValidHost) else None
            for build in builds:
                if isinstance(exc, NoValidHost) and self._hold(build, exc):
                    continue
                self._bury(build.uuid, str(exc), step, build.made, diagnosis, build.spec)
            return
        for build, selections in zip(builds, chosen, strict=True):
            try:
                self._finish(build, selections)
            except Exception:
                LOG.exception("build of %s failed unexpectedly", build.uuid)
                self._bury(
                    build.uuid,
                    "Build failed: an unexpected error; the conductor's log has it.",
                    step,
                    build.made,
                    spec=build.spec,
                )

    def retry_queued(self) -> list[str]:
        """One pass over the servers waiting for room (``queue``)."""
        return queue.work(self)

    def give_up(self, uuid: str, message: str, diagnosis: Diagnosis | None) -> None:
        """End a server that waited for room past its deadline, as one that found no host."""
        self._bury(uuid, message, _Step("", utcnow()), (), diagnosis)

    def refusal(self, uuid: str) -> NoValidHost | None:
        """Why the server, as last asked for, would still find no host now (a what-if: nothing
        is claimed); None when it would find one."""
        with self.api_db.read() as conn:
            document = request_specs.get(conn, uuid)
        if document is None:
            return None  # gone: the build that follows finds out
        spec = claims.with_group_hosts(self.api_db, self.cells, RequestSpec.from_json(document))
        answer = self.scheduler.what_if(spec)
        if answer.fits:
            return None
        return NoValidHost(answer.message or "No valid host was found.", answer.diagnosis)

    def _hold(self, build: _Build, refused: NoValidHost) -> bool:
        """Queue a server that found no host, if it asked to wait and its deadline has not
        passed; it gives back what it took meanwhile (its ports). False: end it now."""
        timeout = queueing.queue_timeout(build.spec)
        if timeout is None:
            return False
        cleanup.release_server(self.placement, self.network, build.uuid, build.made)
        now = utcnow()
        diagnosis = None if refused.diagnosis is None else refused.diagnosis.to_json()
        with self.api_db.write() as conn:
            # With its ports' requests: the queue's what-if asks the scheduler with this spec.
            request_specs.save(conn, build.uuid, build.spec.to_json())
            if build_requests.get(conn, build.uuid) is None:
                return True  # deleted by its user meanwhile: nothing to wait for
            row = build_queue.hold(conn, build.uuid, now, timeout, refused.message, diagnosis)
            if row["expires_at"] <= now:
                build_queue.remove(conn, build.uuid)
                return False
        LOG.info(
            "server %s fits nowhere; queued until %s (try %d)",
            build.uuid, row["expires_at"], row["attempts"],
        )  # fmt: skip
        return True

    def evacuate_server(self, instance_uuid: str, host: str | None, request_id: str = "") -> None:
        """Rebuild a down host's server elsewhere (``evacuate``)."""
        services = evacuate.Services(self.api_db, self.placement, self.network, self.cell_rpc)
        evacuate.evacuate_server(services, self.cells, self.scheduler, instance_uuid, host)

    def unshelve_instance(self, instance_uuid: str, request_id: str = "") -> None:
        """Bring a shelved server back (``unshelve``)."""
        services = unshelve.Services(self.api_db, self.placement, self.network, self.cell_rpc)
        unshelve.unshelve(services, self.cells, self.scheduler, instance_uuid)

    def migrate_server(
        self,
        instance_uuid: str,
        flavor: Mapping[str, Any] | None,
        host: str | None,
        same_host: bool,
        request_id: str = "",
        cross_cell: bool = False,
    ) -> None:
        """Cold migrate or resize a server (``berth.compute.conductor.moves``)."""
        self._mover().migrate_server(instance_uuid, flavor, host, same_host, request_id, cross_cell)

    def confirm_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Keep a server that moved between cells (``berth.compute.conductor.cross_cell``)."""
        cross_cell.confirm(self._mover(), instance_uuid, migration_uuid)

    def revert_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Bring a server that moved between cells back (``berth.compute.conductor.cross_cell``)."""
        cross_cell.revert(self._mover(), instance_uuid, migration_uuid)

    def live_migrate_server(
        self, instance_uuid: str, host: str | None, request_id: str = ""
    ) -> None:
        """Live migrate a server (``berth.compute.conductor.moves``)."""
        self._mover().live_migrate_server(instance_uuid, host, request_id)

    def _mover(self) -> moves.Mover:
        return moves.Mover(
            self.api_db, self.cells, self.placement, self.network, self.scheduler, self.cell_rpc
        )

    def _prepare(self, uuid: str, step: _Step) -> _Build | None:
        """The server's ports, got or made, and its spec with their requests; None when the
        server was deleted already or cannot be built (then it is in cell0)."""
        with self.api_db.read() as conn:
            requested = build_requests.instance_of(conn, uuid)
            spec_document = request_specs.get(conn, uuid)
            # Where it may go, read now rather than in a transaction of its own once scheduled.
            cells = {cell.uuid: cell for cell in self.cells.cells_read(conn)}
        if requested is None or spec_document is None:
            LOG.info("server %s was deleted before it was scheduled", uuid)
            return None
        instance = requested
        made: list[PortEntry] = []
        networks: dict[str, Mapping[str, Any]] = {}
        try:
            answered = ports.prepare(self.network, instance, made)
            spec = dataclasses.replace(
                RequestSpec.from_json(spec_document),
                ports=tuple(ports.requests(self.network, answered, networks)),
            )
        except (ports.PortsUnusable, NetworkError) as exc:
            self._bury(uuid, f"Build failed: {exc}", step, made)
            return None
        # The spec with its ports is saved by whichever write ends this step (``_finish``,
        # ``_hold``, ``_bury``): nothing reads it before, the scheduler is sent it.
        return _Build(uuid, instance, made, spec, step, networks, cells)

    def _schedule(self, builds: list[_Build]) -> list[list[Selection]]:
        """One scheduler call for every server of the request; per server, its selections.

        The servers of one request have ports of the same networks, so the first server's ports
        stand for all in the query; each server's own ports get the providers of the matching
        port and request group (same position) of that first server."""
        first = builds[0].spec
        uuids = tuple(b.uuid for b in builds)
        spec = claims.with_group_hosts(
            self.api_db, self.cells, dataclasses.replace(first, instance_uuids=uuids)
        )
        per_server = self.scheduler.select_destinations(spec)
        return [
            [_for_ports(selection, first.ports, build.spec.ports) for selection in selections]
            for build, selections in zip(builds, per_server, strict=True)
        ]

    def _finish(self, build: _Build, selections: list[Selection]) -> None:
        """Bind (trying alternates), create the Instance in its cell, cast the build to the host."""
        uuid, instance, made = build.uuid, build.instance, build.made
        attempts: list[BuildAttempt] = []
        bound: dict[str, Mapping[str, Any]] = {}
        chosen = claims.bind_first(
            self.api_db, self.placement, self.network, instance, made, selections, attempts,
            bound=bound, grouped=build.spec.server_group is not None,
        )  # fmt: skip
        if chosen is None:
            self._bury(uuid, failed_everywhere(attempts), build.step, made, spec=build.spec)
            return
        selection = selections[chosen]
        # A cell made since the build was prepared is read now.
        cell = build.cells.get(selection.cell_uuid) or self.cells.cell(selection.cell_uuid)
        assert cell is not None, "the scheduler chose a host of an unknown cell"
        network_info = ports.refreshed(self.network, made, bound, build.networks)
        with self.cells.database(cell).write() as conn:
            instances.create(conn, _instance_row(instance, selection, network_info))
            build.step.record(conn, instance, actions.SUCCESS)
        with self.api_db.write() as conn:
            # Deleting the BuildRequest is the compare-and-set every writer takes (the API's
            # delete, the recovery): only its winner moves the mapping.
            taken = build_requests.take(conn, uuid)
            if taken is not None:
                cell_store.set_instance_cell(conn, uuid, cell.id)
            request_specs.save(conn, uuid, build.spec.to_json())
            if queueing.queue_timeout(build.spec) is not None:
                # Out of the queue as it gets its cell: never ACTIVE and still listed as waiting.
                build_queue.remove(conn, uuid)
        if taken is None:
            # The user deleted the server while we built it: give everything back.
            LOG.info("server %s was deleted while it was scheduled; releasing it", uuid)
            cleanup.release_server(self.placement, self.network, uuid, network_info)
            with self.cells.database(cell).write() as conn:
                instances.mark_deleted(conn, uuid)
            return
        asked = build_requests.user_fields(taken["instance"])
        if asked != build_requests.user_fields(instance):
            # The user renamed (or described) the server while it was scheduled.
            with self.cells.database(cell).write() as conn:
                instances.update(conn, uuid, asked)
        self.cell_rpc.host(cell, selection.host).build_and_run_instance(
            uuid, selections[chosen + 1 :], attempts
        )

    def _bury(
        self,
        uuid: str,
        message: str,
        step: _Step,
        made: Sequence[PortEntry] = (),
        diagnosis: Diagnosis | None = None,
        spec: RequestSpec | None = None,
    ) -> None:
        """The server in cell0, in ERROR with a fault (with the scheduler's diagnosis, when it
        found no host); its ports and any claim given back; ``spec``, the one it was scheduled
        with, saved."""
        LOG.info("server %s cannot be built: %s", uuid, message)
        with self.api_db.read() as conn:
            request = build_requests.get(conn, uuid)
        try:
            cleanup.release_server(self.placement, self.network, uuid, made)
        except Exception:
            LOG.exception("releasing what %s held failed; an audit will find it", uuid)
        if request is None:
            return
        cell0 = self.cells.cell0()
        try:
            with self.cells.database(cell0).write() as conn:
                row = _instance_row(dict(request["instance"]), None, [])
                instances.create(conn, {**row, "vm_state": "error", "task_state": None})
                instances.add_fault(
                    conn, uuid, 500, message, details=message,
                    diagnosis=None if diagnosis is None else diagnosis.to_json(),
                )  # fmt: skip
                step.record(conn, request["instance"], actions.ERROR, message)
        except Duplicate:
            LOG.info("server %s was ended already (by the recovery)", uuid)
            return
        with self.api_db.write() as conn:
            buried = build_requests.delete(conn, uuid)
            build_queue.remove(conn, uuid)  # never in ERROR and still listed as waiting
            if spec is not None:
                request_specs.save(conn, uuid, spec.to_json())
            if buried:
                cell_store.set_instance_cell(conn, uuid, cell0.id)
                group_placements.release(conn, uuid)
        if not buried:
            # Deleted by the user (or ended by the recovery) meanwhile: this row must not show.
            with self.cells.database(cell0).write() as conn:
                instances.mark_deleted(conn, uuid)


@dataclass(frozen=True)
class _Step:
    """The conductor's step of one request: written as the server's ``create`` action and its
    schedule event when the server gets its Instance (before, it has no cell to be written in)."""

    request_id: str
    started: dt.datetime

    def record(
        self, conn: Connection, instance: Mapping[str, Any], result: str, details: str | None = None
    ) -> None:
        action_id = actions.begin(
            conn, instance["uuid"], actions.CREATE, self.request_id, instance["user_id"],
            instance["project_id"], _created(instance),
        )  # fmt: skip
        # Under the action just begun (the instance's first): no need to look it up again.
        actions.event_done(
            conn, action_id, actions.SCHEDULE, result, details=details, start_time=self.started
        )


@dataclass(frozen=True)
class _Build:
    """One server of a request, ready to be scheduled."""

    uuid: str
    instance: dict[str, Any]
    made: list[PortEntry]
    spec: RequestSpec
    step: _Step
    # Its ports' networks as read while preparing (their names go in the network info).
    networks: Mapping[str, Mapping[str, Any]]
    # The cells by uuid, as read while preparing.
    cells: Mapping[str, Cell]


def _for_ports(
    selection: Selection, scheduled: Sequence[PortRequest], own: Sequence[PortRequest]
) -> Selection:
    """The selection with its port allocations moved from the ports the query was built from to
    this server's own ports (same position, same request groups in the same order)."""
    allocations: dict[str, dict[str, str]] = {}
    chosen = selection.port_allocations
    for template, port in zip(scheduled, own, strict=True):
        given = chosen.get(template.port_id, {})
        allocations[port.port_id] = {
            str(mine["id"]): given[str(theirs["id"])]
            for theirs, mine in zip(template.request_groups, port.request_groups, strict=True)
            if str(theirs["id"]) in given
        }
    return dataclasses.replace(selection, port_allocations=allocations)


def _instance_row(
    instance: Mapping[str, Any],
    selection: Selection | None,
    network_info: Sequence[PortEntry],
) -> dict[str, Any]:
    return {
        "uuid": instance["uuid"],
        "project_id": instance["project_id"],
        "user_id": instance["user_id"],
        "hostname": instance["name"],
        "host": selection.host if selection else None,
        "node": selection.node if selection else None,
        "vm_state": "building",
        "task_state": "spawning" if selection else None,
        "power_state": 0,
        "flavor": instance["flavor"],
        "image_ref": instance["image"]["id"],
        "availability_zone": instance.get("availability_zone"),
        "key_name": instance.get("key_name"),
        "reservation_id": instance.get("reservation_id"),
        "metadata": instance.get("metadata") or {},
        **build_requests.user_fields(instance),
        "tags": instance.get("tags") or [],
        "user_data": instance.get("user_data"),
        "config_drive": "True" if instance.get("config_drive") else "",
        # Only a server with a host will spawn: one in cell0 keeps no password.
        "injected": instance.get("injected") if selection else None,
        "network_info": [entry.to_json() for entry in network_info],
        "created_at": _created(instance),
    }


def _created(instance: Mapping[str, Any]) -> dt.datetime:
    text = instance.get("created_at")
    if not text:
        return utcnow()
    return dt.datetime.fromisoformat(str(text).replace("Z", "")).replace(tzinfo=None)

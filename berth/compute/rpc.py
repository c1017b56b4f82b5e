"""The compute workflow's messages: every topic, method and payload, in one place.

Four receivers, each with a ``Protocol`` its service implements, a client that sends to it over
the bus, and an endpoint that the bus serves and that decodes what arrives::

    receiver          bus        topic                      methods
    super-conductor   API        super-conductor            build_instances (cast)
                                                           migrate_server, live_migrate_server,
                                                           confirm_cross_cell_resize,
                                                           revert_cross_cell_resize (cast)
                                                           unshelve_instance (cast)
                                                           evacuate_server (cast)
    scheduler         API        scheduler                  select_destinations (call)
                                                           what_if (call)
    cell conductor    the cell   cell-conductor.<cell uuid> reschedule (cast)
                                                           reschedule_move, finish_revert_resize (cast)
                                                           unshelve_failed (cast)
                                                           evacuate_failed (cast)
    compute host      the cell   compute.<host>             build_and_run_instance, terminate_instance (cast)
                                                           finish_resize, confirm_resize,
                                                           revert_resize, post_live_migration,
                                                           drop_copy (cast); start_copy (call)
                                                            attach_interface, detach_interface (call)
                                                           shelve_instance, shelve_offload_instance,
                                                           unshelve_instance (cast)
                                                           evacuate_instance (cast)
                                                           change_power, rebuild_instance (cast)
                                                           get_diagnostics (call)
                                                           external_instance_event (cast)
                                                           soft_delete_instance,
                                                           restore_instance (cast)
                                                           rescue_instance, unrescue_instance (cast);
                                                           set_admin_password,
                                                           get_console_output (call)
                                                           snapshot_instance (cast)

Topics name their cell, so cells may share a broker's virtual host without crossing.

Every message carries ``version``, the receiver's API version the sender speaks. An endpoint
takes any minor version of its major (a newer sender's extra arguments are ignored, so services
can be upgraded one at a time) and refuses another major with ``IncompatibleVersion``. The values
inside (request spec, selections, attempts, diagnosis) carry their own versions (``objects``).
Nothing crosses the bus as an untyped dict: clients encode, endpoints decode.

Version history (bump the minor for an added argument or method, the major for anything else):

- super-conductor 1.0, scheduler 1.0, cell conductor 1.0, compute host 1.0: first versioned API.
- super-conductor 1.1, cell conductor 1.1, compute host 1.1: the moves (migrate_server with
  cross_cell, live_migrate_server, evacuate_server, the cross-cell confirm and revert,
  reschedule_move, finish_revert_resize, evacuate_failed, finish_resize, confirm_resize,
  revert_resize, start_copy, drop_copy, post_live_migration, evacuate_instance), shelving
  (unshelve_instance, unshelve_failed, shelve_instance, shelve_offload_instance) and interfaces
  (attach_interface, detach_interface). A 1.0 receiver has none of them: upgrade the cell
  conductors and hosts before the API and super-conductor start asking for them.
- scheduler 1.1: what_if (a dry run of select_destinations, with the fleet's room for more).
  Upgrade the schedulers before the API.
- compute host 1.2: server actions (change_power for reboot, stop, start, pause, unpause,
  suspend and resume; rebuild_instance). Upgrade the hosts before the API.
- compute host 1.3: get_diagnostics, external_instance_event, soft_delete_instance,
  restore_instance. Upgrade the hosts before the API.
- compute host 1.4: the guest (rescue_instance, unrescue_instance, set_admin_password,
  get_console_output). Upgrade the hosts before the API.
- compute host 1.5: snapshots and backups (snapshot_instance; shelve_instance's image_id,
  which a 1.4 host ignores: it shelves without uploading the image). Upgrade the hosts before
  the API.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from berth.bus import BusClient, CallTimeout, NoServer
from berth.compute.cells import Cell
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.guest import GuestView
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.objects.what_if import WhatIf
from berth.compute.objects.wire import Version

LOG = logging.getLogger(__name__)

SUPER_CONDUCTOR = "super-conductor"
SCHEDULER = "scheduler"

SUPER_CONDUCTOR_VERSION = Version(1, 1)
SCHEDULER_VERSION = Version(1, 1)
CELL_CONDUCTOR_VERSION = Version(1, 1)
COMPUTE_HOST_VERSION = Version(1, 5)


def cell_conductor_topic(cell_uuid: str) -> str:
    return f"cell-conductor.{cell_uuid}"


def host_topic(host: str) -> str:
    return f"compute.{host}"


# -- errors a caller acts on ---------------------------------------------------------------------


class NoValidHost(Exception):
    """No host can take the server: the message is the fault, ``diagnosis`` says why as data."""

    def __init__(self, message: str, diagnosis: Diagnosis | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.diagnosis = diagnosis


class ServiceUnreachable(Exception):
    """A call got no answer in time, or nobody serves its topic (the message says which)."""


class Expired(Exception):
    """A call reached its receiver only after the caller's deadline; nothing was done."""


class InterfaceRefused(Exception):
    """A host refused to attach or detach an interface and left the server as it was: the
    message says why, ``status`` is the HTTP status the Compute API answers it with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class GuestRefused(InterfaceRefused):
    """A host could not do what was asked of a server's guest (it is not running there)."""


# -- the receivers' interfaces -------------------------------------------------------------------


class MoveConductorAPI(Protocol):
    def migrate_server(
        self,
        instance_uuid: str,
        flavor: Mapping[str, Any] | None,
        host: str | None,
        same_host: bool,
        request_id: str,
        cross_cell: bool = False,
    ) -> None:
        """Cold migrate (``flavor`` None) or resize the server: park its source allocation on a
        new migration, schedule (to ``host`` if named; its own host only when ``same_host``;
        another cell when its own has no room and ``cross_cell``), bind its ports at the
        destination and cast ``finish_resize`` there (or move its records to the other cell)."""
        ...

    def confirm_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Keep a server that moved to another cell there: drop the source cell's copy."""
        ...

    def revert_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Bring a server that moved to another cell back to its source cell."""
        ...

    def live_migrate_server(self, instance_uuid: str, host: str | None, request_id: str) -> None:
        """Live migrate the server: park its source allocation on a new migration, schedule
        (to ``host`` if named), give each port an inactive binding on the destination, start
        the copy there, then switch the bindings over and let the source clean up."""
        ...


class EvacuateConductorAPI(Protocol):
    def evacuate_server(self, instance_uuid: str, host: str | None, request_id: str) -> None:
        """Rebuild the server of a host that is down elsewhere in its cell (on ``host`` if
        named): park its source allocation on a new evacuation migration, schedule, bind its
        ports at the destination and cast ``evacuate_instance`` there."""
        ...


class SuperConductorAPI(MoveConductorAPI, EvacuateConductorAPI, Protocol):
    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        """Build the servers of one request (their BuildRequests and specs are in the API DB)."""
        ...

    def unshelve_instance(self, instance_uuid: str, request_id: str) -> None:
        """Bring back a shelved server: power it on where it is (SHELVED), or schedule it again
        with its ports' current requests, in its cell (SHELVED_OFFLOADED)."""
        ...


class SchedulerAPI(Protocol):
    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        """Per instance of ``spec``: the claimed selection, then its alternates (same cell).

        Raises ``NoValidHost`` when an instance fits nowhere, and ``Expired`` once the wall
        clock passes ``deadline`` (the caller gave up); nothing stays claimed then."""
        ...

    def what_if(self, spec: RequestSpec) -> WhatIf:
        """(1.1) What ``select_destinations`` would answer now, claiming nothing, and how many
        more instances of ``spec`` fit, host by host. An instance that fits nowhere is an
        answer (``WhatIf.diagnosis``), not an error."""
        ...


class MoveCellConductorAPI(Protocol):
    def reschedule_move(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """A move failed on its destination: try the next alternate, or put the server back on
        its source as it was before the move."""
        ...

    def finish_revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """The destination dropped its copy: give the server back its source allocation, port
        bindings and flavor."""
        ...


class MoveHostAPI(Protocol):
    def finish_resize(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """Start the moved server here (the destination); on failure hand it back."""
        ...

    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Drop the source's copy and the allocation the migration holds (the source host)."""
        ...

    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        """Drop the destination's copy and hand back to the cell conductor (the destination)."""
        ...

    def start_copy(
        self,
        instance_uuid: str,
        migration_uuid: str,
        port_allocations: Mapping[str, Mapping[str, str]],
    ) -> str | None:
        """Start the copy of a moving server here (the destination of a live migration or of a
        move between cells); why it failed, or None."""
        ...

    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        """Drop the copy a live migration left here (the source) and the migration's allocation."""
        ...

    def drop_copy(self, instance_uuid: str) -> None:
        """Drop the server's copy here and its virtual functions (the other end of a move
        between cells, once confirmed or reverted)."""
        ...


class EvacuateCellConductorAPI(Protocol):
    def evacuate_failed(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """An evacuation's spawn failed on ``failed_host``: the next alternate, or ERROR with
        the server's allocation and ports given back to its source."""
        ...


class EvacuateHostAPI(Protocol):
    def evacuate_instance(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """Rebuild the evacuated server here (the destination, claimed and bound); on failure
        hand it to the cell conductor with the alternates."""
        ...


class CellConductorAPI(MoveCellConductorAPI, EvacuateCellConductorAPI, Protocol):
    def reschedule(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """A build failed on ``failed_host``: move it to the next alternate, or end it in ERROR."""
        ...

    def unshelve_failed(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        """An unshelve's spawn failed on ``failed_host``: the next alternate, or back to
        SHELVED_OFFLOADED holding nothing."""
        ...


class ComputeHostAPI(MoveHostAPI, EvacuateHostAPI, Protocol):
    def build_and_run_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        """Spawn the server (claimed and bound here already); on failure hand it back."""
        ...

    def terminate_instance(self, instance_uuid: str) -> None:
        """Delete the server and everything it holds."""
        ...

    def attach_interface(
        self,
        instance_uuid: str,
        port_id: str | None,
        network_id: str | None,
        fixed_ip: str | None,
    ) -> PortEntry:
        """Attach the user's port ``port_id``, or a new port on ``network_id`` (at ``fixed_ip``),
        to the server on this host; the port's resources join the server's allocation. Raises
        ``InterfaceRefused`` (nothing changed) when it cannot."""
        ...

    def detach_interface(self, instance_uuid: str, port_id: str) -> None:
        """Detach the port from the server and give back what it held; ``InterfaceRefused``
        when the port is not the server's."""
        ...

    def shelve_instance(self, instance_uuid: str, offload: bool, image_id: str | None) -> None:
        """Power the server off and upload its disk to ``image_id`` (SHELVED); with
        ``offload``, offload it at once. ``image_id``: 1.3."""
        ...

    def snapshot_instance(self, instance_uuid: str, image_id: str, rotation: int | None) -> None:
        """Upload the server's disk to the queued image ``image_id`` and end the
        ``image_snapshot`` task; for a backup (``image_backup``), then keep only the newest
        ``rotation`` backups of its type. 1.3."""
        ...

    def shelve_offload_instance(self, instance_uuid: str) -> None:
        """Destroy the shelved server here and give back what it holds on this host, its
        allocation and its ports' bindings (SHELVED_OFFLOADED, no host)."""
        ...

    def unshelve_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        """Power a SHELVED server on, or spawn an offloaded one the conductors claimed and bound
        here (on failure hand it to the cell conductor with the alternates)."""
        ...

    def change_power(self, instance_uuid: str, change: str) -> None:
        """Reboot, stop, start, pause, unpause, suspend or resume the server (``change``: a
        key of ``berth.compute.power.CHANGES``; the API set its task state). 1.2."""
        ...

    def rebuild_instance(self, instance_uuid: str) -> None:
        """Spawn the server again from the image now on its instance, keeping its allocation,
        ports and bindings (the API set ``rebuilding``). 1.2."""
        ...

    def get_diagnostics(self, instance_uuid: str) -> GuestView | None:
        """What this host sees of the server's guest; None when it has no such guest. 1.3."""
        ...

    def external_instance_event(self, instance_uuid: str, name: str, tag: str | None) -> None:
        """Another service's event about the server (``network-changed``, ...), ``tag`` the
        port it names. 1.3."""
        ...

    def soft_delete_instance(self, instance_uuid: str) -> None:
        """Power the server off and keep it, restorable, SOFT_DELETED (the API set
        ``soft-deleting``). 1.3."""
        ...

    def restore_instance(self, instance_uuid: str) -> None:
        """Power a soft-deleted server on again, ACTIVE (the API set ``restoring``). 1.3."""
        ...

    def rescue_instance(self, instance_uuid: str, image_ref: str, admin_pass: str) -> None:
        """Boot the guest from ``image_ref`` with ``admin_pass`` (the API set ``rescuing``).
        1.4."""
        ...

    def unrescue_instance(self, instance_uuid: str) -> None:
        """Boot the rescued guest from its own disk again (the API set ``unrescuing``). 1.4."""
        ...

    def set_admin_password(self, instance_uuid: str, admin_pass: str) -> None:
        """The running guest takes ``admin_pass`` (the API set ``updating_password``);
        ``GuestRefused`` when it cannot. 1.4."""
        ...

    def get_console_output(self, instance_uuid: str) -> str:
        """The guest's console log. 1.4."""
        ...


class CellRPC(Protocol):
    """What reaches into the cells: their conductors and their hosts."""

    def conductor(self, cell: Cell) -> CellConductorAPI: ...

    def host(self, cell: Cell, host: str) -> ComputeHostAPI: ...


# -- clients -------------------------------------------------------------------------------------


class SuperConductorClient:
    def __init__(self, bus: BusClient) -> None:
        self._bus = bus

    def migrate_server(
        self,
        instance_uuid: str,
        flavor: Mapping[str, Any] | None,
        host: str | None,
        same_host: bool,
        request_id: str,
        cross_cell: bool = False,
    ) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "migrate_server", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, flavor=None if flavor is None else dict(flavor),
            host=host, same_host=same_host, request_id=request_id, cross_cell=cross_cell,
        )  # fmt: skip

    def confirm_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "confirm_cross_cell_resize", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
        )  # fmt: skip

    def revert_cross_cell_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "revert_cross_cell_resize", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
        )  # fmt: skip

    def live_migrate_server(self, instance_uuid: str, host: str | None, request_id: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "live_migrate_server", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, host=host, request_id=request_id,
        )  # fmt: skip

    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "build_instances", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuids=list(instance_uuids), request_id=request_id,
        )  # fmt: skip

    def unshelve_instance(self, instance_uuid: str, request_id: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "unshelve_instance", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, request_id=request_id,
        )  # fmt: skip

    def evacuate_server(self, instance_uuid: str, host: str | None, request_id: str) -> None:
        self._bus.cast(
            SUPER_CONDUCTOR, "evacuate_server", version=str(SUPER_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, host=host, request_id=request_id,
        )  # fmt: skip


class SchedulerClient:
    def __init__(self, bus: BusClient, timeout: float) -> None:
        self._bus = bus
        self.timeout = timeout

    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        # The scheduler drops what it claimed once we stop waiting (clocks kept by NTP).
        deadline = min(deadline or math.inf, time.time() + self.timeout)
        try:
            answer = self._bus.call(
                SCHEDULER, "select_destinations", timeout=self.timeout,
                version=str(SCHEDULER_VERSION), spec=spec.to_json(), deadline=deadline,
            )  # fmt: skip
        except CallTimeout:
            raise ServiceUnreachable(
                f"The scheduler did not answer within {self.timeout:g} s."
            ) from None
        except NoServer:
            raise ServiceUnreachable("No scheduler is running.") from None
        if answer.get("expired"):
            raise ServiceUnreachable(f"The scheduler did not answer within {self.timeout:g} s.")
        refused = answer.get("no_valid_host")
        if refused is not None:
            diagnosis = refused.get("diagnosis")
            raise NoValidHost(
                refused["message"], None if diagnosis is None else Diagnosis.from_json(diagnosis)
            )
        return [[Selection.from_json(s) for s in chosen] for chosen in answer["selections"]]

    def what_if(self, spec: RequestSpec) -> WhatIf:
        try:
            answer = self._bus.call(
                SCHEDULER, "what_if", timeout=self.timeout,
                version=str(SCHEDULER_VERSION), spec=spec.to_json(),
            )  # fmt: skip
        except CallTimeout:
            raise ServiceUnreachable(
                f"The scheduler did not answer within {self.timeout:g} s."
            ) from None
        except NoServer:
            raise ServiceUnreachable("No scheduler is running.") from None
        return WhatIf.from_json(answer["what_if"])


class CellConductorClient:
    def __init__(self, bus: BusClient, cell_uuid: str) -> None:
        self._bus = bus
        self._topic = cell_conductor_topic(cell_uuid)

    def reschedule_move(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "reschedule_move", version=str(CELL_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid, failed_host=failed_host,
            reason=reason, alternates=[s.to_json() for s in alternates],
            attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def finish_revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self._bus.cast(
            self._topic, "finish_revert_resize", version=str(CELL_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
        )  # fmt: skip

    def reschedule(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "reschedule", version=str(CELL_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, failed_host=failed_host, reason=reason,
            alternates=[s.to_json() for s in alternates], attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def unshelve_failed(
        self,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "unshelve_failed", version=str(CELL_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, failed_host=failed_host, reason=reason,
            alternates=[s.to_json() for s in alternates], attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def evacuate_failed(
        self,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "evacuate_failed", version=str(CELL_CONDUCTOR_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid, failed_host=failed_host,
            reason=reason, alternates=[s.to_json() for s in alternates],
            attempts=[a.to_json() for a in attempts],
        )  # fmt: skip


class ComputeHostClient:
    def __init__(self, bus: BusClient, host: str, timeout: float = 60.0) -> None:
        self._bus = bus
        self._topic = host_topic(host)
        self._host = host
        self.timeout = timeout

    def finish_resize(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "finish_resize", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            alternates=[s.to_json() for s in alternates], attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def confirm_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self._migration_cast("confirm_resize", instance_uuid, migration_uuid)

    def revert_resize(self, instance_uuid: str, migration_uuid: str) -> None:
        self._migration_cast("revert_resize", instance_uuid, migration_uuid)

    def start_copy(
        self,
        instance_uuid: str,
        migration_uuid: str,
        port_allocations: Mapping[str, Mapping[str, str]],
    ) -> str | None:
        answer = self._call(
            "start_copy", instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            port_allocations={p: dict(g) for p, g in port_allocations.items()},
        )  # fmt: skip
        return answer.get("failure")

    def post_live_migration(self, instance_uuid: str, migration_uuid: str) -> None:
        self._migration_cast("post_live_migration", instance_uuid, migration_uuid)

    def drop_copy(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "drop_copy", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def _migration_cast(self, method: str, instance_uuid: str, migration_uuid: str) -> None:
        self._bus.cast(
            self._topic, method, version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
        )  # fmt: skip

    def build_and_run_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        self._bus.cast(
            self._topic, "build_and_run_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, alternates=[s.to_json() for s in alternates],
            attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def terminate_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "terminate_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def attach_interface(
        self,
        instance_uuid: str,
        port_id: str | None,
        network_id: str | None,
        fixed_ip: str | None,
    ) -> PortEntry:
        answer = self._call(
            "attach_interface", instance_uuid=instance_uuid, port_id=port_id,
            network_id=network_id, fixed_ip=fixed_ip,
        )  # fmt: skip
        return PortEntry.from_json(answer["entry"])

    def detach_interface(self, instance_uuid: str, port_id: str) -> None:
        self._call("detach_interface", instance_uuid=instance_uuid, port_id=port_id)

    def _call(
        self,
        method: str,
        refusal: type[InterfaceRefused] = InterfaceRefused,
        **arguments: Any,
    ) -> dict[str, Any]:
        """A call whose refusal comes back as an answer (raised as ``refusal``)."""
        try:
            answer: dict[str, Any] = self._bus.call(
                self._topic, method, timeout=self.timeout,
                version=str(COMPUTE_HOST_VERSION), **arguments,
            )  # fmt: skip
        except CallTimeout:
            raise ServiceUnreachable(
                f"Host {self._host} did not answer {method} within {self.timeout:g} s."
            ) from None
        except NoServer:
            raise ServiceUnreachable(
                f"The compute service of host {self._host} is not running."
            ) from None
        refused = answer.get("refused")
        if refused is not None:
            raise refusal(int(refused["status"]), str(refused["message"]))
        return answer

    def shelve_instance(self, instance_uuid: str, offload: bool, image_id: str | None) -> None:
        self._bus.cast(
            self._topic, "shelve_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, offload=offload, image_id=image_id,
        )  # fmt: skip

    def snapshot_instance(self, instance_uuid: str, image_id: str, rotation: int | None) -> None:
        self._bus.cast(
            self._topic, "snapshot_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, image_id=image_id, rotation=rotation,
        )  # fmt: skip

    def shelve_offload_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "shelve_offload_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def unshelve_instance(
        self, instance_uuid: str, alternates: Sequence[Selection], attempts: Sequence[BuildAttempt]
    ) -> None:
        self._bus.cast(
            self._topic, "unshelve_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, alternates=[s.to_json() for s in alternates],
            attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def evacuate_instance(
        self,
        instance_uuid: str,
        migration_uuid: str,
        alternates: Sequence[Selection],
        attempts: Sequence[BuildAttempt],
    ) -> None:
        self._bus.cast(
            self._topic, "evacuate_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, migration_uuid=migration_uuid,
            alternates=[s.to_json() for s in alternates], attempts=[a.to_json() for a in attempts],
        )  # fmt: skip

    def change_power(self, instance_uuid: str, change: str) -> None:
        self._bus.cast(
            self._topic, "change_power", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, change=change,
        )  # fmt: skip

    def rebuild_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "rebuild_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def get_diagnostics(self, instance_uuid: str) -> GuestView | None:
        guest = self._call("get_diagnostics", instance_uuid=instance_uuid).get("guest")
        return GuestView.from_json(guest) if guest is not None else None

    def external_instance_event(self, instance_uuid: str, name: str, tag: str | None) -> None:
        self._bus.cast(
            self._topic, "external_instance_event", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, name=name, tag=tag,
        )  # fmt: skip

    def soft_delete_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "soft_delete_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def restore_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "restore_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def rescue_instance(self, instance_uuid: str, image_ref: str, admin_pass: str) -> None:
        self._bus.cast(
            self._topic, "rescue_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid, image_ref=image_ref, admin_pass=admin_pass,
        )  # fmt: skip

    def unrescue_instance(self, instance_uuid: str) -> None:
        self._bus.cast(
            self._topic, "unrescue_instance", version=str(COMPUTE_HOST_VERSION),
            instance_uuid=instance_uuid,
        )  # fmt: skip

    def set_admin_password(self, instance_uuid: str, admin_pass: str) -> None:
        self._call(
            "set_admin_password", GuestRefused, instance_uuid=instance_uuid,
            admin_pass=admin_pass,
        )  # fmt: skip

    def get_console_output(self, instance_uuid: str) -> str:
        return str(self._call("get_console_output", instance_uuid=instance_uuid)["output"])


class BusCellRPC:
    """``CellRPC`` over each cell's own bus (``connect`` gives a cell's bus client)."""

    def __init__(self, connect: Callable[[Cell], BusClient], timeout: float = 60.0) -> None:
        self._connect = connect
        # How long a call to a host waits for its answer.
        self._timeout = timeout

    def conductor(self, cell: Cell) -> CellConductorAPI:
        return CellConductorClient(self._connect(cell), cell.uuid)

    def host(self, cell: Cell, host: str) -> ComputeHostAPI:
        return ComputeHostClient(self._connect(cell), host, self._timeout)


# -- endpoints: what the bus serves --------------------------------------------------------------


def _accept(receiver: str, understood: Version, version: str, newer: Mapping[str, Any]) -> None:
    understood.check(f"{receiver} API", Version.parse(version))
    if newer:
        LOG.debug(
            "%s: ignoring arguments of a newer version %s: %s", receiver, version, sorted(newer)
        )


def _build_state(
    alternates: list[dict[str, Any]], attempts: list[dict[str, Any]]
) -> tuple[list[Selection], list[BuildAttempt]]:
    """What a build carries from host to host, decoded."""
    return [Selection.from_json(s) for s in alternates], [
        BuildAttempt.from_json(a) for a in attempts
    ]


class SuperConductorEndpoint:
    def __init__(self, implementation: SuperConductorAPI) -> None:
        self._impl = implementation

    def migrate_server(
        self,
        version: str,
        instance_uuid: str,
        flavor: dict[str, Any] | None,
        host: str | None,
        same_host: bool,
        request_id: str = "",
        cross_cell: bool = False,
        **newer: Any,
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.migrate_server(instance_uuid, flavor, host, same_host, request_id, cross_cell)

    def confirm_cross_cell_resize(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.confirm_cross_cell_resize(instance_uuid, migration_uuid)

    def revert_cross_cell_resize(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.revert_cross_cell_resize(instance_uuid, migration_uuid)

    def live_migrate_server(
        self, version: str, instance_uuid: str, host: str | None, request_id: str = "", **newer: Any
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.live_migrate_server(instance_uuid, host, request_id)

    def build_instances(
        self, version: str, instance_uuids: list[str], request_id: str = "", **newer: Any
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.build_instances(instance_uuids, request_id)

    def unshelve_instance(
        self, version: str, instance_uuid: str, request_id: str = "", **newer: Any
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.unshelve_instance(instance_uuid, request_id)

    def evacuate_server(
        self,
        version: str,
        instance_uuid: str,
        host: str | None = None,
        request_id: str = "",
        **newer: Any,
    ) -> None:
        _accept(SUPER_CONDUCTOR, SUPER_CONDUCTOR_VERSION, version, newer)
        self._impl.evacuate_server(instance_uuid, host, request_id)


class SchedulerEndpoint:
    def __init__(self, implementation: SchedulerAPI) -> None:
        self._impl = implementation

    def select_destinations(
        self, version: str, spec: dict[str, Any], deadline: float | None = None, **newer: Any
    ) -> dict[str, Any]:
        _accept(SCHEDULER, SCHEDULER_VERSION, version, newer)
        if deadline is not None and time.time() > deadline:
            LOG.info("dropping a select_destinations that waited past its deadline")
            return {"expired": True}
        try:
            chosen = self._impl.select_destinations(RequestSpec.from_json(spec), deadline)
        except NoValidHost as exc:
            # An answer, not an error: the diagnosis must reach the caller as data.
            return {
                "no_valid_host": {
                    "message": exc.message,
                    "diagnosis": None if exc.diagnosis is None else exc.diagnosis.to_json(),
                }
            }
        except Expired:
            return {"expired": True}
        return {"selections": [[s.to_json() for s in per_instance] for per_instance in chosen]}

    def what_if(self, version: str, spec: dict[str, Any], **newer: Any) -> dict[str, Any]:
        _accept(SCHEDULER, SCHEDULER_VERSION, version, newer)
        return {"what_if": self._impl.what_if(RequestSpec.from_json(spec)).to_json()}


class CellConductorEndpoint:
    def __init__(self, implementation: CellConductorAPI) -> None:
        self._impl = implementation

    def reschedule_move(
        self,
        version: str,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("cell conductor", CELL_CONDUCTOR_VERSION, version, newer)
        self._impl.reschedule_move(
            instance_uuid, migration_uuid, failed_host, reason, *_build_state(alternates, attempts)
        )

    def finish_revert_resize(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept("cell conductor", CELL_CONDUCTOR_VERSION, version, newer)
        self._impl.finish_revert_resize(instance_uuid, migration_uuid)

    def reschedule(
        self,
        version: str,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("cell conductor", CELL_CONDUCTOR_VERSION, version, newer)
        self._impl.reschedule(
            instance_uuid, failed_host, reason, *_build_state(alternates, attempts)
        )

    def unshelve_failed(
        self,
        version: str,
        instance_uuid: str,
        failed_host: str,
        reason: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("cell conductor", CELL_CONDUCTOR_VERSION, version, newer)
        self._impl.unshelve_failed(
            instance_uuid, failed_host, reason, *_build_state(alternates, attempts)
        )

    def evacuate_failed(
        self,
        version: str,
        instance_uuid: str,
        migration_uuid: str,
        failed_host: str,
        reason: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("cell conductor", CELL_CONDUCTOR_VERSION, version, newer)
        self._impl.evacuate_failed(
            instance_uuid, migration_uuid, failed_host, reason, *_build_state(alternates, attempts)
        )


class ComputeHostEndpoint:
    def __init__(self, implementation: ComputeHostAPI) -> None:
        self._impl = implementation

    def finish_resize(
        self,
        version: str,
        instance_uuid: str,
        migration_uuid: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.finish_resize(instance_uuid, migration_uuid, *_build_state(alternates, attempts))

    def confirm_resize(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.confirm_resize(instance_uuid, migration_uuid)

    def revert_resize(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.revert_resize(instance_uuid, migration_uuid)

    def start_copy(
        self,
        version: str,
        instance_uuid: str,
        migration_uuid: str,
        port_allocations: dict[str, dict[str, str]],
        **newer: Any,
    ) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        failure = self._impl.start_copy(instance_uuid, migration_uuid, port_allocations)
        return {"failure": failure}

    def drop_copy(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.drop_copy(instance_uuid)

    def post_live_migration(
        self, version: str, instance_uuid: str, migration_uuid: str, **newer: Any
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.post_live_migration(instance_uuid, migration_uuid)

    def build_and_run_instance(
        self,
        version: str,
        instance_uuid: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.build_and_run_instance(instance_uuid, *_build_state(alternates, attempts))

    def terminate_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.terminate_instance(instance_uuid)

    def attach_interface(
        self,
        version: str,
        instance_uuid: str,
        port_id: str | None = None,
        network_id: str | None = None,
        fixed_ip: str | None = None,
        **newer: Any,
    ) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        try:
            entry = self._impl.attach_interface(instance_uuid, port_id, network_id, fixed_ip)
        except InterfaceRefused as exc:
            # An answer, not an error: the status must reach the caller as data.
            return {"refused": {"status": exc.status, "message": exc.message}}
        return {"entry": entry.to_json()}

    def detach_interface(
        self, version: str, instance_uuid: str, port_id: str, **newer: Any
    ) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        try:
            self._impl.detach_interface(instance_uuid, port_id)
        except InterfaceRefused as exc:
            return {"refused": {"status": exc.status, "message": exc.message}}
        return {}

    def shelve_instance(
        self,
        version: str,
        instance_uuid: str,
        offload: bool = False,
        image_id: str | None = None,
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.shelve_instance(instance_uuid, offload, image_id)

    def snapshot_instance(
        self,
        version: str,
        instance_uuid: str,
        image_id: str,
        rotation: int | None = None,
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.snapshot_instance(instance_uuid, image_id, rotation)

    def shelve_offload_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.shelve_offload_instance(instance_uuid)

    def unshelve_instance(
        self,
        version: str,
        instance_uuid: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.unshelve_instance(instance_uuid, *_build_state(alternates, attempts))

    def evacuate_instance(
        self,
        version: str,
        instance_uuid: str,
        migration_uuid: str,
        alternates: list[dict[str, Any]],
        attempts: list[dict[str, Any]],
        **newer: Any,
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.evacuate_instance(
            instance_uuid, migration_uuid, *_build_state(alternates, attempts)
        )

    def change_power(self, version: str, instance_uuid: str, change: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.change_power(instance_uuid, change)

    def rebuild_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.rebuild_instance(instance_uuid)

    def get_diagnostics(self, version: str, instance_uuid: str, **newer: Any) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        guest = self._impl.get_diagnostics(instance_uuid)
        return {"guest": guest.to_json() if guest is not None else None}

    def external_instance_event(
        self, version: str, instance_uuid: str, name: str, tag: str | None = None, **newer: Any
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.external_instance_event(instance_uuid, name, tag)

    def soft_delete_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.soft_delete_instance(instance_uuid)

    def restore_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.restore_instance(instance_uuid)

    def rescue_instance(
        self, version: str, instance_uuid: str, image_ref: str, admin_pass: str, **newer: Any
    ) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.rescue_instance(instance_uuid, image_ref, admin_pass)

    def unrescue_instance(self, version: str, instance_uuid: str, **newer: Any) -> None:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        self._impl.unrescue_instance(instance_uuid)

    def set_admin_password(
        self, version: str, instance_uuid: str, admin_pass: str, **newer: Any
    ) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        try:
            self._impl.set_admin_password(instance_uuid, admin_pass)
        except InterfaceRefused as exc:
            return {"refused": {"status": exc.status, "message": exc.message}}
        return {}

    def get_console_output(self, version: str, instance_uuid: str, **newer: Any) -> dict[str, Any]:
        _accept("compute host", COMPUTE_HOST_VERSION, version, newer)
        return {"output": self._impl.get_console_output(instance_uuid)}

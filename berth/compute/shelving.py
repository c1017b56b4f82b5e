"""Shelve, shelve-offload and unshelve: the compute API's side (``os-shelve``).

Each starts a task on the server (:mod:`server_tasks`: a conditional task-state change and the
instance action) and hands it over with one cast:

    shelve          ACTIVE, SHUTOFF, PAUSED, SUSPENDED  task shelving            -> its host
    shelveOffload   SHELVED                             task shelving_offloading -> its host
    unshelve        SHELVED, SHELVED_OFFLOADED          task unshelving          -> super-conductor

Shelving makes the image ``<name>-shelved`` (``snapshots``), which the host uploads the guest's
disk to; the host powers a shelved server off and, when ``shelved_offload_time`` is 0, offloads
it at once (``host/shelving``); the conductors place an offloaded one again
(``conductor/unshelve``), and the host that unshelves it deletes the image, as does a delete of
the shelved server.
Any other state is a 409, as Nova answers.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import actions, exceptions, server_tasks, snapshots
from berth.compute.cells import Cell
from berth.compute.service import ComputeService

SHELVABLE = ("active", "stopped", "paused", "suspended")
SHELVED = "shelved"
OFFLOADED = "shelved_offloaded"


def shelve(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=actions.SHELVE, task_state="shelving", vm_states=SHELVABLE, check=_on_a_host,
    )  # fmt: skip
    offload = service.settings.shelved_offload_time == 0
    # The image the server is shelved to (without an image service, as in tests of the API
    # alone, there is none).
    image_id = None
    if service.images is not None:
        try:
            image_id = snapshots.shelved_image(service, started.instance)
        except BaseException:
            server_tasks.undo(service, started, "shelving")
            raise
    try:
        _cast(
            service, started, "shelving",
            lambda: service.cell_rpc.host(started.cell, started.instance["host"]).shelve_instance(
                server_uuid, offload, image_id
            ),
        )  # fmt: skip
    except exceptions.ComputeError:
        snapshots.delete_shelved_image(service.images, server_uuid)
        raise


def shelve_offload(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=actions.SHELVE_OFFLOAD, task_state="shelving_offloading", vm_states=(SHELVED,),
        check=_on_a_host,
    )  # fmt: skip
    host = service.cell_rpc.host(started.cell, started.instance["host"])
    _cast(
        service, started, "shelving_offloading", lambda: host.shelve_offload_instance(server_uuid)
    )


def unshelve(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=actions.UNSHELVE, task_state="unshelving", vm_states=(SHELVED, OFFLOADED),
    )  # fmt: skip
    _cast(
        service, started, "unshelving",
        lambda: service.conductor.unshelve_instance(server_uuid, context.request_id),
    )  # fmt: skip


def _on_a_host(cell: Cell, row: RowMapping) -> None:
    """A server in one of these states has a host; one without (a record half restored, say)
    cannot be reached."""
    if not row["host"]:
        raise exceptions.Conflict(
            f"Instance {row['uuid']} has no host in vm_state {row['vm_state']}; it cannot be "
            "shelved."
        )


def _cast(
    service: ComputeService,
    started: server_tasks.Started,
    task_state: str,
    send: Callable[[], None],
) -> None:
    try:
        send()
    except BusError:
        server_tasks.undo(service, started, task_state)
        raise exceptions.ComputeError(
            f"The service that acts on instance {started.uuid} could not be reached; "
            "nothing was done."
        ) from None

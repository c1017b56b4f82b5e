"""Actions on a server's guest: rescue, unrescue, changePassword, os-getConsoleOutput (the
compute API's side; the host's is ``host/guest_actions``).

Every one is Nova's, with its states (a server in another state, or with a task under way, is
a 409; a locked one a 409 to all but admins)::

    action          from vm_state            task state         ends in        answer
    rescue          active, stopped, error   rescuing           rescued        200 adminPass
    unrescue        rescued                  unrescuing         active         202
    changePassword  active                   updating_password  (unchanged)    202, once the
                                                                               guest has it
    console output  any, with a host         none               (unchanged)    200 the log

Rescue and unrescue are casts to the host, which boots the guest from the rescue image (the
server's own image unless another is named) and back; the password is the one asked for or a
new one, and only the guest keeps it. changePassword and the console output are calls: the
guest must answer before the API does.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import exceptions, power, server_tasks, servers
from berth.compute.cells import Cell
from berth.compute.rpc import GuestRefused, ServiceUnreachable
from berth.compute.service import ComputeService

RESCUE = "rescue"
UNRESCUE = "unrescue"
CHANGE_PASSWORD = "changePassword"
RESCUABLE = ("active", "stopped", "error")
RESCUING = "rescuing"
UNRESCUING = "unrescuing"
UPDATING_PASSWORD = "updating_password"
# What the console output never carries: control characters other than tab and newline.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f]")


def rescue(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    image_ref: str | None,
    admin_pass: str,
) -> None:
    """Start the rescue: the server boots from ``image_ref`` (its own image when None), an
    image the caller may use and that is active (else a 400, as Nova's unsupported rescue
    image)."""

    def check(cell: Cell, row: RowMapping) -> None:
        power.on_a_host(RESCUE)(cell, row)
        if image_ref is None:
            return
        with service.api_db.read() as conn:
            try:
                servers.requested_image(conn, context, image_ref)
            except exceptions.BadRequest as exc:
                raise exceptions.BadRequest(
                    f"Rescue image {image_ref} is not supported: {exc}"
                ) from None

    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=RESCUE, task_state=RESCUING, vm_states=RESCUABLE, check=check,
    )  # fmt: skip
    rescue_image = image_ref or str(started.instance["image_ref"])
    _cast(
        service, started, RESCUING,
        lambda host: host.rescue_instance(server_uuid, rescue_image, admin_pass),
    )  # fmt: skip


def unrescue(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
) -> None:
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=UNRESCUE, task_state=UNRESCUING, vm_states=("rescued",),
        check=power.on_a_host(UNRESCUE),
    )  # fmt: skip
    _cast(service, started, UNRESCUING, lambda host: host.unrescue_instance(server_uuid))


def change_password(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    admin_pass: str,
) -> None:
    """Have the guest take ``admin_pass``; returns once it has. Conflict when the guest cannot
    (it is not running), the task state put back either way."""
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=CHANGE_PASSWORD, task_state=UPDATING_PASSWORD, vm_states=("active",),
        check=power.on_a_host(CHANGE_PASSWORD),
    )  # fmt: skip
    host = service.cell_rpc.host(started.cell, started.instance["host"])
    try:
        host.set_admin_password(server_uuid, admin_pass)
    except GuestRefused as exc:
        server_tasks.undo(service, started, UPDATING_PASSWORD)
        raise exceptions.Conflict(exc.message) from None
    except (BusError, ServiceUnreachable):
        server_tasks.undo(service, started, UPDATING_PASSWORD)
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached; the password was not "
            "changed."
        ) from None


def console_output(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    length: int | None,
) -> str:
    """The last ``length`` lines of the guest's console (all of it when None)."""
    cell, row = server_tasks.find(service, context, server_uuid, may_see, "get_console_output")
    if not row["host"] or row["task_state"] in ("deleting", "migrating"):
        raise exceptions.Conflict(f"Instance {server_uuid} is not ready.")
    try:
        log = service.cell_rpc.host(cell, row["host"]).get_console_output(server_uuid)
    except (BusError, ServiceUnreachable):
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached."
        ) from None
    return _CONTROL.sub("", tail(log, length))


def tail(log: str, length: int | None) -> str:
    """The last ``length`` lines of ``log`` (None: all; 0: none), as Nova counts them."""
    if length is None:
        return log
    if length == 0:
        return ""
    return "\n".join(log.split("\n")[-length:])


def _cast(
    service: ComputeService,
    started: server_tasks.Started,
    task_state: str,
    send: Callable[..., None],
) -> None:
    try:
        send(service.cell_rpc.host(started.cell, started.instance["host"]))
    except BusError:
        server_tasks.undo(service, started, task_state)
        raise exceptions.ServiceUnavailable(
            f"The host of instance {started.uuid} could not be reached; nothing was done."
        ) from None

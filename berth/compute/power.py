"""Changing a server's power: reboot, stop, start, pause, unpause, suspend, resume.

Every change is one row of :data:`CHANGES`, read by both sides: the API checks the states the
server may be in, sets the change's task state and records the instance action
(:mod:`server_tasks`), then casts ``change_power`` to the server's host; the host
(``host/power``) acts through its driver and sets the state the row ends in. The states and
the 409 on any other are Nova's::

    change       from vm_state                         task state        ends      power
    reboot SOFT  active                                rebooting         active    running
    reboot HARD  active, stopped, paused, suspended,   rebooting_hard    active    running
                 error
    stop         active, error                         powering-off      stopped   shutdown
    start        stopped                               powering-on       active    running
    pause        active                                pausing           paused    paused
    unpause      paused                                unpausing         active    running
    suspend      active                                suspending        suspended suspended
    resume       suspended                             resuming          active    running
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import exceptions, server_tasks
from berth.compute.cells import Cell
from berth.compute.service import ComputeService

# Power states as the API shows them (OS-EXT-STS:power_state), Nova's numbers.
NOSTATE = 0
RUNNING = 1
PAUSED = 3
SHUTDOWN = 4
SUSPENDED = 7


@dataclass(frozen=True)
class PowerChange:
    """One way to change a server's power, and the states around it."""

    name: str  # how the host is told (``change_power``)
    action: str  # the instance action recorded (Nova's name)
    event: str  # the host's step under that action (Nova's method name)
    from_vm_states: tuple[str, ...]
    task_state: str
    vm_state: str  # where it ends
    power_state: int
    # A hard reboot may take over a reboot that hangs, as Nova lets it.
    from_task_states: tuple[str | None, ...] = (None,)


CHANGES: Mapping[str, PowerChange] = {
    change.name: change
    for change in (
        PowerChange(
            "reboot_soft", "reboot", "compute_reboot_instance", ("active",),
            "rebooting", "active", RUNNING,
        ),
        PowerChange(
            "reboot_hard", "reboot", "compute_reboot_instance",
            ("active", "stopped", "paused", "suspended", "error"),
            "rebooting_hard", "active", RUNNING, (None, "rebooting", "rebooting_hard"),
        ),
        PowerChange(
            "stop", "stop", "compute_stop_instance", ("active", "error"),
            "powering-off", "stopped", SHUTDOWN,
        ),
        PowerChange(
            "start", "start", "compute_start_instance", ("stopped",),
            "powering-on", "active", RUNNING,
        ),
        PowerChange(
            "pause", "pause", "compute_pause_instance", ("active",),
            "pausing", "paused", PAUSED,
        ),
        PowerChange(
            "unpause", "unpause", "compute_unpause_instance", ("paused",),
            "unpausing", "active", RUNNING,
        ),
        PowerChange(
            "suspend", "suspend", "compute_suspend_instance", ("active",),
            "suspending", "suspended", SUSPENDED,
        ),
        PowerChange(
            "resume", "resume", "compute_resume_instance", ("suspended",),
            "resuming", "active", RUNNING,
        ),
    )
}  # fmt: skip


def change(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    name: str,
) -> None:
    """Start the power change ``name`` (a key of :data:`CHANGES`) and hand it to the host."""
    wanted = CHANGES[name]
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=wanted.action, task_state=wanted.task_state, vm_states=wanted.from_vm_states,
        task_states=wanted.from_task_states, check=on_a_host(wanted.action),
    )  # fmt: skip
    try:
        service.cell_rpc.host(started.cell, started.instance["host"]).change_power(
            server_uuid, name
        )
    except BusError:
        server_tasks.undo(service, started, wanted.task_state)
        raise exceptions.ServiceUnavailable(
            f"The host of instance {server_uuid} could not be reached; nothing was done."
        ) from None


def on_a_host(action: str) -> Callable[[Cell, RowMapping], None]:
    """A check for :func:`server_tasks.start`: the server has a host to act (one in ERROR that
    never got one, in cell0, has none)."""

    def check(cell: Cell, row: RowMapping) -> None:
        if not row["host"]:
            raise exceptions.Conflict(
                f"Cannot '{action}' instance {row['uuid']} while it is in vm_state "
                f"{row['vm_state']}: it has no host."
            )

    return check

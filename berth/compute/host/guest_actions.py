"""What a compute host does to a server's guest (``HostAgent`` calls these): rescue, unrescue,
set its admin password, read its console.

The API set the task state and recorded the action; each step here is guarded by that task
state, as the power changes are (``host/power``), so a message delivered twice, or after a
delete or a reset, does nothing. A rescue keeps everything the server holds (its allocation,
ports, bindings and virtual functions): only what the guest boots from changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from berth.compute import actions, guest_actions, power
from berth.compute.db import instances
from berth.compute.host.guest import GuestNotRunning
from berth.compute.rpc import GuestRefused

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

RESCUE_STEP = "compute_rescue_instance"
UNRESCUE_STEP = "compute_unrescue_instance"
PASSWORD_STEP = "compute_set_admin_password"


def rescue(agent: HostAgent, instance_uuid: str, image_ref: str, admin_pass: str) -> None:
    if not _has_task(agent, instance_uuid, guest_actions.RESCUING):
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, guest_actions.RESCUE, RESCUE_STEP, agent.host
        )
    agent.driver.rescue(instance_uuid, image_ref, admin_pass)
    _end(agent, instance_uuid, step, guest_actions.RESCUING, "rescued")


def unrescue(agent: HostAgent, instance_uuid: str) -> None:
    if not _has_task(agent, instance_uuid, guest_actions.UNRESCUING):
        return
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, guest_actions.UNRESCUE, UNRESCUE_STEP, agent.host
        )
    agent.driver.unrescue(instance_uuid)
    _end(agent, instance_uuid, step, guest_actions.UNRESCUING, "active")


def set_admin_password(agent: HostAgent, instance_uuid: str, admin_pass: str) -> None:
    """The guest takes the password; GuestRefused when it cannot (not running here)."""
    if not _has_task(agent, instance_uuid, guest_actions.UPDATING_PASSWORD):
        raise GuestRefused(409, f"Instance {instance_uuid} is not changing its password here.")
    with agent.db.write() as conn:
        step = actions.step_started(
            conn, instance_uuid, guest_actions.CHANGE_PASSWORD, PASSWORD_STEP, agent.host
        )
    try:
        agent.driver.set_admin_password(instance_uuid, admin_pass)
    except GuestNotRunning as exc:
        with agent.db.write() as conn:
            actions.step_ended(conn, step, actions.ERROR, str(exc))
        raise GuestRefused(409, f"Failed to set the admin password: {exc}") from None
    with agent.db.write() as conn:
        done = instances.update(
            conn, instance_uuid, {"task_state": None},
            expected_task_states=[guest_actions.UPDATING_PASSWORD],
        )  # fmt: skip
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)


def console_output(agent: HostAgent, instance_uuid: str) -> str:
    return agent.driver.console_output(instance_uuid)


def _has_task(agent: HostAgent, instance_uuid: str, task_state: str) -> bool:
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    return row is not None and row["task_state"] == task_state and row["host"] == agent.host


def _end(
    agent: HostAgent, instance_uuid: str, step: int | None, task_state: str, vm_state: str
) -> None:
    with agent.db.write() as conn:
        done = instances.update(
            conn,
            instance_uuid,
            {"vm_state": vm_state, "task_state": None, "power_state": power.RUNNING},
            expected_task_states=[task_state],
        )
        actions.step_ended(conn, step, actions.SUCCESS if done else actions.ERROR)
